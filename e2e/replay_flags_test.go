package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// nonDefaultDecisions are decision flags (cmd/hintstream/flags_decisions.go)
// away from their defaults, given to the live run and to its replay alike.
var nonDefaultDecisions = []string{
	"--prefetch-ttl", "7s",
	"--router-cost", "classic", "--overlap-score-weight", "2", "--router-host-cache-hit-weight", "0.5",
	"--spread-wakeups", "--spread-half-life", "1m",
	"--overlap-jump", "1", "--exclude-stale", "--index-max-blocks", "100000",
	"--pin-headroom", "2", "--pin-slack", "7s", "--pin-min-ttl", "20s", "--pin-max-ttl", "1h",
	"--tool-time-default", "12s", "--tool-time-percentile", "0.5", "--tool-time-min-samples", "3",
	"--pin-renew-max", "0", "--keep-pin-on-next-turn",
	"--max-tokens", "4096", "--max-string", "4096", "--max-headers", "64",
	"--holding-workers", "16", "--holding-blocks", "512",
}

// canonicalLines reads a hints file into its lines, each in canonical JSON
// key order, in file order.
func canonicalLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		c, _ := json.Marshal(v)
		out = append(out, string(c))
	}
	return out
}

// TestReplayMatchesLiveWithDecisionFlags: a live run with many decision
// flags away from their defaults and a dry-run replay given the same flags
// write the same hint log, line for line; the flags visibly took effect
// (prefetch life, pin TTL, no release with --keep-pin-on-next-turn).
func TestReplayMatchesLiveWithDecisionFlags(t *testing.T) {
	vec := sglangVector(t, "mha-tp2-page16")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	w1, w2, pin := newMessageSink(t), newMessageSink(t), newMessageSink(t)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	layout := vec.Layout
	for id, ep := range map[uint64]string{1: w1.ep, 2: w2.ep} {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
			HintEndpoints: []string{ep}, ObjectLayout: &layout}); err != nil {
			t.Fatal(err)
		}
	}
	prompt := seq(9000, 8*16)
	publishStored(t, ctx, js, 1, prompt[:2*16])
	publishStored(t, ctx, js, 2, prompt[:6*16])
	busy := uint64(3)
	publishJSON(t, ctx, js, streams.LoadSubject(2), schemas.ActiveLoad{WorkerID: 2, ActiveDecodeBlocks: &busy})

	live := filepath.Join(t.TempDir(), "live.jsonl")
	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--pin-endpoint", pin.ep, "--hints-log", live,
		"--log-format", "json"}, nonDefaultDecisions...)...)
	p.waitLine(t, 30*time.Second, "hintstream running")
	since := time.Now().Add(-time.Millisecond)

	received := map[string]int64{}
	wakeUp := func(id, session string, prompt []uint32) {
		r := wake(id, session, prompt)
		received[id] = r.ReceivedAtMs
		publishRequest(t, ctx, js, r)
	}
	wakeUp("r-1", "a", prompt)
	wakeUp("r-2", "b", prompt[:3*16])
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "r-3", SessionID: "c", Model: model, TokenIDs: vec.Tokens[:40]})
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	publishStored(t, ctx, js, 1, prompt)
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "r-3", SessionID: "c",
		Model: model, WorkerID: 1, FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "search"}},
		OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 10*time.Second, func() bool { d, _ := pin.counts(); return d == 1 }, "the pin")
	wakeUp("r-4", "c", prompt)
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "r-5", SessionID: "c", Model: model, TokenIDs: prompt})
	natstest.Eventually(t, 10*time.Second, func() bool {
		d1, _ := w1.counts()
		d2, _ := w2.counts()
		return d1+d2 == 3
	}, "3 prefetches")
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests") // r-5 handled: with --keep-pin-on-next-turn, no release
	p.stop(t)

	dry := filepath.Join(t.TempDir(), "replay.jsonl")
	out, err := exec.Command(binary, append([]string{"replay", "--nats-url", srv.ClientURL(), "--since", since.Format(time.RFC3339Nano),
		"--dry-run", "--out", dry, "--pin-endpoint", pin.ep}, nonDefaultDecisions...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	want, got := canonicalLines(t, live), canonicalLines(t, dry)
	if !slices.Equal(want, got) {
		t.Fatalf("replay differs from the live run\nlive:\n%s\nreplay:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if dp, _ := pin.counts(); len(want) != 4 || dp != 1 {
		t.Fatalf("the live run logged %d hints (want 3 prefetches and a pin, no release), the pin socket got %d:\n%s",
			len(want), dp, strings.Join(want, "\n"))
	}
	for _, l := range got {
		var r struct {
			ActionType string `json:"action_type"`
			Payload    struct {
				RequestID   string `json:"request_id"`
				ExpiresAtMs int64  `json:"expires_at_ms"`
				TTLMs       int64  `json:"ttl_ms"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		switch {
		case r.Payload.RequestID != "":
			if d := r.Payload.ExpiresAtMs - received[r.Payload.RequestID]; d != 7000 {
				t.Fatalf("%s expires %d ms after its wake-up, want 7000 (--prefetch-ttl 7s): %s", r.Payload.RequestID, d, l)
			}
		case r.Payload.TTLMs != 0:
			// 12 s expected (--tool-time-default) × 2 (--pin-headroom) + 7 s (--pin-slack).
			if r.Payload.TTLMs != 31000 {
				t.Fatalf("pin TTL %d ms, want 31000: %s", r.Payload.TTLMs, l)
			}
		default:
			t.Fatalf("unexpected hint %s", l)
		}
	}
}
