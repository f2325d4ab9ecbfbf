// Package cmdline holds the command line's conventions that more than one
// package registering flags needs: defaults taken from the environment
// (and said in the flag's usage, so a config file does not override the
// environment), comma-separated lists, and the --models flag shared by
// `run` and `replay`.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
)

// ErrInvalidFlag is wrapped by the errors of this package's flags.
var ErrInvalidFlag = errors.New("invalid flag")

// Env returns the variable key, or def when it is unset or empty: an
// empty variable (HINTSTREAM_GROUP= in a unit file) must not override the
// config file or the default with nothing.
func Env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok && v != "" {
		return v
	}
	return def
}

// NATSURLEnv is the default of every --nats-url: HINTSTREAM_NATS_URL,
// else NATS_URL (the variable the nats CLI and most NATS clients read),
// else def. The flag wins over both.
func NATSURLEnv(def string) string {
	return Env("HINTSTREAM_NATS_URL", Env("NATS_URL", def))
}

// NATSURLUsage is every --nats-url's help text, after what.
const NATSURLUsage = " (env HINTSTREAM_NATS_URL, else NATS_URL)"

// List splits a comma-separated flag value, trimming blanks and dropping
// empty items.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ModelsFlag registers --models, shared by run and replay (a replay of a
// member serving only some models must make that member's choices); the
// returned func gives the parsed list (nil: every model).
func ModelsFlag(fs *flag.FlagSet) func() ([]string, error) {
	models := fs.String("models", "", "comma-separated models this member serves: it consumes only their requests and responses, indexes only their workers' KV events and chooses only among their workers (one consumer group per model family); empty: every model")
	return func() ([]string, error) {
		ms := List(*models)
		if slices.Contains(ms, "") {
			return nil, fmt.Errorf("%w: --models: empty model name", ErrInvalidFlag)
		}
		return ms, nil
	}
}
