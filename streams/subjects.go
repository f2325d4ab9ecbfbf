package streams

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Subject prefixes of the default streams.
const (
	RequestPrefix    = "llm.requests."
	ResponsePrefix   = "llm.responses."
	KVEventPrefix    = "kv.events."
	LoadPrefix       = "kv.load."
	DeadLetterPrefix = "hintstream.dlq."
)

// ModelToken turns a model name into one subject token. '.', '*', '>',
// whitespace, control characters and invalid UTF-8 bytes become '_'
// (each would split the token, act as a wildcard or break the protocol);
// '/' and everything else is kept, so "Qwen/Qwen3-8B" stays readable. An
// empty name gives "_". Distinct names may share a token ("a.b", "a_b"):
// the event itself carries the exact model.
func ModelToken(model string) string {
	if model == "" {
		return "_"
	}
	clean := true
	for i := 0; i < len(model); {
		r, n := utf8.DecodeRuneInString(model[i:])
		if badTokenRune(r, n) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return model
	}
	var b strings.Builder
	b.Grow(len(model))
	for i := 0; i < len(model); {
		r, n := utf8.DecodeRuneInString(model[i:])
		if badTokenRune(r, n) {
			b.WriteByte('_')
		} else {
			b.WriteString(model[i : i+n])
		}
		i += n
	}
	return b.String()
}

func badTokenRune(r rune, size int) bool {
	switch {
	case r == '.' || r == '*' || r == '>':
		return true
	case r == utf8.RuneError && size == 1:
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r)
}

// RequestSubject is where request events for model are published.
func RequestSubject(model string) string { return RequestPrefix + ModelToken(model) }

// ResponseSubject is where response events for model are published.
func ResponseSubject(model string) string { return ResponsePrefix + ModelToken(model) }

// KVEventSubject is where worker workerID publishes its KV events.
func KVEventSubject(workerID uint64) string {
	return KVEventPrefix + strconv.FormatUint(workerID, 10)
}

// LoadSubject is where worker workerID publishes its load metrics.
func LoadSubject(workerID uint64) string {
	return LoadPrefix + strconv.FormatUint(workerID, 10)
}

// DeadLetterSubject is where rejected events of kind are copied; kind is
// made a single token like a model name.
func DeadLetterSubject(kind string) string { return DeadLetterPrefix + ModelToken(kind) }

// WorkerFromSubject returns the worker id in the last token of a KV-event
// or load subject ("kv.events.7" → 7). The prefix is not checked, so
// configured subjects work too, but the token must be a canonical decimal
// uint64 (no sign, no leading zeros): "kv.events.007" would otherwise be a
// second name for worker 7.
func WorkerFromSubject(subject string) (uint64, error) {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 {
		return 0, fmt.Errorf("streams: subject %q has no worker id token (want e.g. %q)", subject, KVEventSubject(7))
	}
	id, err := parseWorkerID(subject[i+1:])
	if err != nil {
		return 0, fmt.Errorf("streams: subject %q: %w", subject, err)
	}
	return id, nil
}

func parseWorkerID(tok string) (uint64, error) {
	if tok == "" {
		return 0, fmt.Errorf("empty worker id token")
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] < '0' || tok[i] > '9' {
			return 0, fmt.Errorf("worker id %q is not a decimal number", tok)
		}
	}
	if len(tok) > 1 && tok[0] == '0' {
		return 0, fmt.Errorf("worker id %q has leading zeros", tok)
	}
	id, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("worker id %q does not fit in 64 bits", tok)
	}
	return id, nil
}

// validSubject checks a stream subject (wildcards allowed) the way the
// server will, so a bad Config fails before any request.
func validSubject(s string) error {
	if s == "" {
		return fmt.Errorf("empty subject")
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		switch {
		case t == "":
			return fmt.Errorf("subject %q has an empty token", s)
		case strings.IndexFunc(t, unicode.IsSpace) >= 0:
			return fmt.Errorf("subject %q contains whitespace", s)
		case t == ">" && i != len(toks)-1:
			return fmt.Errorf("subject %q: '>' must be the last token", s)
		case len(t) > 1 && strings.ContainsAny(t, "*>"):
			return fmt.Errorf("subject %q: wildcards must be whole tokens", s)
		}
	}
	return nil
}

// covers reports whether every subject matched by sub is also matched by
// pattern: "llm.>" covers "llm.requests.>" and "llm.*.x", "llm.*" covers
// "llm.a" but not "llm.>".
func covers(pattern, sub string) bool {
	pt := strings.Split(pattern, ".")
	st := strings.Split(sub, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) {
			return false
		}
		switch s := st[i]; {
		case p == "*":
			if s == ">" {
				return false
			}
		case p != s:
			return false
		}
	}
	return len(pt) == len(st)
}

// missingSubjects returns the subjects of want not covered by any one of
// have. (A subject covered only by a union of several, like "a.>" by
// "a.*" plus "a.*.>", is reported missing: conservative, and rare.)
func missingSubjects(have, want []string) []string {
	var missing []string
	for _, w := range want {
		ok := false
		for _, h := range have {
			if covers(h, w) {
				ok = true
				break
			}
		}
		if !ok {
			missing = append(missing, w)
		}
	}
	return missing
}
