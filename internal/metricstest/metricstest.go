// Package metricstest reads typed metrics by their exposed names
// ("hintstream_requests_malformed_total|bad json" for one series), as the
// tests assert them. Production code reads the typed fields instead.
package metricstest

import "strings"

// Summarizer is *metrics.Families or *metrics.Receiver.
type Summarizer interface{ Summary() map[string]uint64 }

// Get returns the value under key ("name" for a total, "name|label" for
// one series), 0 when it is 0 or unknown.
func Get(s Summarizer, key string) uint64 { return s.Summary()[key] }

// Snapshot returns every nonzero value whose key starts with prefix.
func Snapshot(s Summarizer, prefix string) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range s.Summary() {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}
