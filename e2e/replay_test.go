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
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats-server/v2/server"
)

// hintLines reads a hints file into sorted canonical lines.
func hintLines(t *testing.T, path string) []string {
	t.Helper()
	out := canonicalLines(t, path)
	slices.Sort(out)
	return out
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
		c, _ := json.Marshal(v) // canonical key order
		out = append(out, string(c))
	}
	return out
}

// liveRun is the history a live run made and logged, for a replay to
// repeat.
type liveRun struct {
	srv          *server.Server
	w1, w2, pin  *messageSink
	live         string           // its --hints-log
	since        time.Time        // just before its first request
	receivedAtMs map[string]int64 // each wake-up's received_at_ms
}

// runLive starts `run` with flags on a fresh bus with two workers, and
// publishes wake-ups for prompts each worker favours, a tool call, KV
// events between them and the next turn; it returns once wantPins hints
// (the pin, and a release unless --keep-pin-on-next-turn) reached the pin
// socket and every request was handled.
func runLive(t *testing.T, wantPins int, flags ...string) liveRun {
	t.Helper()
	vec := sglangVector(t, "mha-tp2-page16")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	r := liveRun{srv: srv, w1: newMessageSink(t), w2: newMessageSink(t), pin: newMessageSink(t),
		live: filepath.Join(t.TempDir(), "live.jsonl"), receivedAtMs: map[string]int64{}}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	layout := vec.Layout
	for id, ep := range map[uint64]string{1: r.w1.ep, 2: r.w2.ep} {
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

	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--pin-endpoint", r.pin.ep, "--hints-log", r.live,
		"--log-format", "json"}, flags...)...)
	p.waitLine(t, 30*time.Second, "hintstream running")
	r.since = time.Now().Add(-time.Millisecond)
	wakeUp := func(id, session string, prompt []uint32) {
		ev := wake(id, session, prompt)
		r.receivedAtMs[id] = ev.ReceivedAtMs
		publishRequest(t, ctx, js, ev)
	}

	// Wake-ups for prompts each worker favours, a tool call, the next turn.
	wakeUp("r-1", "a", prompt)
	wakeUp("r-2", "b", prompt[:3*16])
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "r-3", SessionID: "c", Model: model, TokenIDs: vec.Tokens[:40]})
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	// More KV events mid-run: worker 1 now caches the whole prompt.
	publishStored(t, ctx, js, 1, prompt)
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "r-3", SessionID: "c",
		Model: model, WorkerID: 1, FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "search"}},
		OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 10*time.Second, func() bool { d, _ := r.pin.counts(); return d == 1 }, "the pin")
	// The next turn: its wake-up prefetches, the turn itself releases the pin.
	wakeUp("r-4", "c", prompt)
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "r-5", SessionID: "c", Model: model, TokenIDs: prompt})
	natstest.Eventually(t, 10*time.Second, func() bool {
		d1, _ := r.w1.counts()
		d2, _ := r.w2.counts()
		dp, _ := r.pin.counts()
		return d1+d2 == 3 && dp == wantPins
	}, "3 prefetches and %d hints at the pin socket", wantPins)
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	p.stop(t)
	return r
}

// replayDry replays r's history with flags into a dry-run file and
// returns the file and the command's output.
func replayDry(t *testing.T, r liveRun, flags ...string) (string, []byte) {
	t.Helper()
	dry := filepath.Join(t.TempDir(), "replay.jsonl")
	out, err := exec.Command(binary, append([]string{"replay", "--nats-url", r.srv.ClientURL(),
		"--since", r.since.Format(time.RFC3339Nano), "--dry-run", "--out", dry, "--pin-endpoint", r.pin.ep}, flags...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, out)
	}
	return dry, out
}

// TestReplayMatchesLive: a live run logs the hints it hands to its senders;
// a dry-run replay of the same history must produce exactly the same
// hints (prefetches, pins and a release), chosen against the state of the
// moment.
func TestReplayMatchesLive(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	r := runLive(t, 2)
	w1, w2, live := r.w1, r.w2, r.live
	dry, out := replayDry(t, r)
	want, got := hintLines(t, live), hintLines(t, dry)
	if len(want) != 5 {
		t.Fatalf("the live run logged %d hints, want 5:\n%s", len(want), strings.Join(want, "\n"))
	}
	if !slices.Equal(want, got) {
		t.Fatalf("replay differs from the live run\nlive:\n%s\nreplay:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	// r-1 (full prompt) went to worker 2: w1 (128-32)/16+8 = 14, w2
	// (128-96)/16+3+8 = 13. r-4 (same prompt) went to worker 1 only because
	// of the KV event published after r-3: w1 0+8 = 8, w2 13. The replay
	// saw the state of each moment.
	endpointOf := func(id string) string {
		for _, l := range got {
			var r struct {
				Endpoint string         `json:"endpoint"`
				Payload  map[string]any `json:"payload"`
			}
			_ = json.Unmarshal([]byte(l), &r)
			if r.Payload["request_id"] == id {
				return r.Endpoint
			}
		}
		return ""
	}
	if endpointOf("r-1") != w2.ep || endpointOf("r-4") != w1.ep {
		t.Fatalf("r-1 → %s (want worker 2 %s), r-4 → %s (want worker 1 %s)", endpointOf("r-1"), w2.ep, endpointOf("r-4"), w1.ep)
	}
	if !strings.Contains(string(out), "prefetch") {
		t.Fatalf("no summary: %s", out)
	}
}
