package streams

import (
	"fmt"
	"strings"
	"unicode"
)

// ValidName checks a stream, consumer or durable name the way
// nats-server does (no white space, '.', '*', '>', path separators or
// control characters), so a bad name fails at --check-config and not
// at the first request.
func ValidName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is empty", what)
	case strings.IndexFunc(name, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return fmt.Errorf("%s %q contains white space", what, name)
	case strings.ContainsAny(name, ".*>/\\"):
		return fmt.Errorf("%s %q contains one of . * > / \\, which the server refuses in names", what, name)
	}
	return nil
}

// Validate checks every named stream of s as EnsureSet will, and what
// the server refuses at creation: a duplicate window longer than
// the stream's max age.
func (s Set) Validate() error {
	for _, c := range s.configs() {
		if c.Name == "" {
			continue
		}
		if err := ValidName("stream name", c.Name); err != nil {
			return fmt.Errorf("streams: %w", err)
		}
		if err := c.validate(); err != nil {
			return err
		}
		if c.MaxAge > 0 && c.Duplicates > c.MaxAge {
			return fmt.Errorf("streams: stream %q: max age %v is below its duplicate window %v; the server refuses it", c.Name, c.MaxAge, c.Duplicates)
		}
	}
	return nil
}

// ModelSubjects returns the subjects a frontend may publish model's
// events on under prefix: the documented one, prefix + ModelToken(model),
// and, when it differs and is a valid literal subject, prefix + model
// as spelled, dots kept ("llm.requests.Qwen/Qwen2.5-7B", three tokens).
// A member serving model reads both, so either spelling is consumed;
// names holding a wildcard or white space have the documented subject
// only.
func ModelSubjects(prefix, model string) []string {
	doc := prefix + ModelToken(model)
	lit := prefix + model
	if lit == doc || model == "" || validSubject(lit) != nil || strings.ContainsAny(model, "*>") {
		return []string{doc}
	}
	return []string{doc, lit}
}
