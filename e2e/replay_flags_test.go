package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// nonDefaultDecisions are decision flags (engine.Decisions.RegisterFlags, decide/engine/flags.go)
// away from their defaults, given to the live run and to its replay alike.
var nonDefaultDecisions = []string{
	"--prefetch-ttl", "7s",
	"--router-cost", "classic", "--overlap-score-weight", "2", "--router-host-cache-hit-weight", "0.5",
	"--spread-wakeups", "--spread-half-life", "1m",
	"--overlap-jump", "1", "--exclude-stale", "--index-max-blocks", "100000",
	"--pin-headroom", "2", "--pin-slack", "7s", "--pin-min-ttl", "20s", "--pin-max-ttl", "1h",
	"--tool-time-default", "12s", "--tool-time-percentile", "0.5", "--tool-time-min-samples", "3",
	"--pin-renew-max", "0", "--keep-pin-on-next-turn", "--pin-budget-tokens", "1000000",
	"--max-tokens", "4096", "--max-string", "4096", "--max-headers", "64",
	"--holding-workers", "16", "--holding-blocks", "512",
}

// TestReplayMatchesLiveWithDecisionFlags: a live run with many decision
// flags away from their defaults and a dry-run replay given the same flags
// write the same hint log, line for line; the flags visibly took effect
// (prefetch life, pin TTL, no release with --keep-pin-on-next-turn).
func TestReplayMatchesLiveWithDecisionFlags(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	r := runLive(t, 1, nonDefaultDecisions...)
	dry, _ := replayDry(t, r, nonDefaultDecisions...)
	want, got := canonicalLines(t, r.live), canonicalLines(t, dry)
	if !slices.Equal(want, got) {
		t.Fatalf("replay differs from the live run\nlive:\n%s\nreplay:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if dp, _ := r.pin.counts(); len(want) != 4 || dp != 1 {
		t.Fatalf("the live run logged %d hints (want 3 prefetches and a pin, no release), the pin socket got %d:\n%s",
			len(want), dp, strings.Join(want, "\n"))
	}
	for _, l := range got {
		var h struct {
			Payload struct {
				RequestID   string `json:"request_id"`
				ExpiresAtMs int64  `json:"expires_at_ms"`
				TTLMs       int64  `json:"ttl_ms"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l), &h); err != nil {
			t.Fatal(err)
		}
		switch {
		case h.Payload.RequestID != "":
			if d := h.Payload.ExpiresAtMs - r.receivedAtMs[h.Payload.RequestID]; d != 7000 {
				t.Fatalf("%s expires %d ms after its wake-up, want 7000 (--prefetch-ttl 7s): %s", h.Payload.RequestID, d, l)
			}
		case h.Payload.TTLMs != 0:
			// 12 s expected (--tool-time-default) × 2 (--pin-headroom) + 7 s (--pin-slack).
			if h.Payload.TTLMs != 31000 {
				t.Fatalf("pin TTL %d ms, want 31000: %s", h.Payload.TTLMs, l)
			}
		default:
			t.Fatalf("unexpected hint %s", l)
		}
	}
}
