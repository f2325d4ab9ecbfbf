package streams

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// Unconsumed counts, per subject, the messages of stream name that no
// durable consumer's filter matches: events of a model no --models group
// serves, or published on a spelling of its subject no group reads. Only
// streams with at least one durable consumer are counted (the KV-event
// and load streams are read by ordered consumers, which take
// everything); nil otherwise.
func Unconsumed(ctx context.Context, js jetstream.JetStream, name string, consumers []ConsumerState) (map[string]uint64, error) {
	var filters [][]string
	for _, c := range consumers {
		if c.Durable {
			f := c.FilterSubjects
			if len(f) == 0 {
				f = []string{">"}
			}
			filters = append(filters, f)
		}
	}
	if len(filters) == 0 {
		return nil, nil
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("streams: %q: %w", name, err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		return nil, fmt.Errorf("streams: subjects of %q: %w", name, err)
	}
	out := map[string]uint64{}
	for subj, n := range info.State.Subjects {
		if !matchesAny(filters, subj) {
			out[subj] = n
		}
	}
	return out, nil
}

func matchesAny(filters [][]string, subj string) bool {
	for _, fs := range filters {
		for _, f := range fs {
			if SubjectMatches(f, subj) {
				return true
			}
		}
	}
	return false
}

// SubjectMatches reports whether the literal subject subj matches filter,
// with NATS wildcards ('*' one token, '>' the rest).
func SubjectMatches(filter, subj string) bool {
	ft, st := strings.Split(filter, "."), strings.Split(subj, ".")
	for i, f := range ft {
		if f == ">" {
			return len(st) > i
		}
		if i >= len(st) || (f != "*" && f != st[i]) {
			return false
		}
	}
	return len(ft) == len(st)
}
