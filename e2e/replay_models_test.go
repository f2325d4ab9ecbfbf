package e2e

import (
	"context"
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
)

// TestReplayMatchesLiveWithModels: a live member serving one model
// (--models) and a dry-run replay given the same --models write the same
// hint log, line for line: the replay reads only that model's requests
// and chooses only among its workers, as the member did. A replay
// without --models makes the other model's choices too, so the flag is
// what makes them equal.
func TestReplayMatchesLiveWithModels(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	const other = "meta/Llama-3.1-8B"
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	w1, w2, w3 := newMessageSink(t), newMessageSink(t), newMessageSink(t)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []schemas.WorkerRecord{
		{WorkerID: 1, Model: model, KvBlockSize: 16, HintEndpoints: []string{w1.ep}},
		{WorkerID: 2, Model: model, KvBlockSize: 16, HintEndpoints: []string{w2.ep}},
		{WorkerID: 3, Model: other, KvBlockSize: 16, HintEndpoints: []string{w3.ep}},
	} {
		if err := registry.Put(ctx, kv, w); err != nil {
			t.Fatal(err)
		}
	}
	prompt := seq(9000, 8*16)
	publishStored(t, ctx, js, 1, prompt[:2*16])
	publishStored(t, ctx, js, 2, prompt[:6*16])
	publishStored(t, ctx, js, 3, prompt)

	live := filepath.Join(t.TempDir(), "live.jsonl")
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--hints-log", live, "--log-format", "json", "--models", model)
	p.waitLine(t, 30*time.Second, "hintstream running")
	since := time.Now().Add(-time.Millisecond)
	otherWake := func(id string, prompt []uint32) schemas.RequestEvent {
		ev := wake(id, id, prompt)
		ev.Model = other
		return ev
	}
	publishRequest(t, ctx, js, wake("m-1", "a", prompt))
	publishRequest(t, ctx, js, otherWake("o-1", prompt))
	publishRequest(t, ctx, js, wake("m-2", "b", prompt[:3*16]))
	publishRequest(t, ctx, js, otherWake("o-2", prompt[:3*16]))
	natstest.Eventually(t, 10*time.Second, func() bool {
		d1, _ := w1.counts()
		d2, _ := w2.counts()
		return d1+d2 == 2
	}, "2 prefetches to the model's workers")
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	p.stop(t)
	if d3, _ := w3.counts(); d3 != 0 {
		t.Fatalf("the member serving %s sent %d hints to the %s worker", model, d3, other)
	}

	replayTo := func(flags ...string) []string {
		t.Helper()
		dry := filepath.Join(t.TempDir(), "replay.jsonl")
		out, err := exec.Command(binary, append([]string{"replay", "--nats-url", srv.ClientURL(),
			"--since", since.Format(time.RFC3339Nano), "--dry-run", "--out", dry}, flags...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("replay %v: %v\n%s", flags, err, out)
		}
		return canonicalLines(t, dry)
	}
	want := canonicalLines(t, live)
	if len(want) != 2 {
		t.Fatalf("the live run logged %d hints, want 2 prefetches:\n%s", len(want), strings.Join(want, "\n"))
	}
	if got := replayTo("--models", model); !slices.Equal(want, got) {
		t.Fatalf("replay --models differs from the live member\nlive:\n%s\nreplay:\n%s",
			strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	all := replayTo()
	if len(all) != 4 || !slices.ContainsFunc(all, func(l string) bool { return strings.Contains(l, w3.ep) }) {
		t.Fatalf("a replay without --models made %d hints, want 4 with the %s worker's:\n%s",
			len(all), other, strings.Join(all, "\n"))
	}
}
