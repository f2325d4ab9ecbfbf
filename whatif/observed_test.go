package whatif

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// waitPast waits, on the clock, until the wall time is past ms (stream
// timestamps must order after a request's received time).
func waitPast(t *testing.T, ms int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().UnixMilli() <= ms {
		if time.Now().After(deadline) {
			t.Fatalf("clock did not pass %d", ms)
		}
		<-time.After(time.Millisecond)
	}
}

// TestObservedDeviceHitsFromKVEvents runs a real embedded JetStream: a
// simulated cluster of two 3-block workers publishes its KV events as
// workers do (RouterEvent JSON on kv.events.<worker>), one prompt before
// --since (in the lookback) and one in the window, which evicts the
// first; requests and responses in the window name the serving worker.
// Each request must find exactly the blocks the worker held when it
// came; without the lookback the first one finds nothing; the read
// changes no stream.
func TestObservedDeviceHitsFromKVEvents(t *testing.T) {
	js := bus(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := cluster.NewCluster(cluster.Config{Workers: 2, DeviceBlocks: 3, L3Blocks: 16, BlockSize: 512,
		Sink: &cluster.JetStreamSink{Ctx: ctx, JS: js}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(id uint64, n int) []uint32 {
		var out []uint32
		for b := uint64(0); len(out) < n; b++ {
			out = append(out, workload.BlockTokens(id*16+b, 512, min(512, n-len(out)))...)
		}
		return out
	}
	a, b := prompt(1, 3*512), prompt(2, 3*512)
	serve := func(wk int, tokens []uint32) {
		p, err := cl.Prompt(tokens)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cl.Serve(wk, p, len(tokens), 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := client.NewPublisher(js, client.WithFormat(client.Msgpack))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	request := func(tokens []uint32, worker uint64) {
		n++
		at := time.Now().UnixMilli()
		id := "r-" + string(rune('a'+n))
		if err := pub.PublishRequest(ctx, &schemas.RequestEvent{RequestID: id, SessionID: id, Model: "sim/model",
			TokenIDs: tokens, ReceivedAtMs: at}); err != nil {
			t.Fatal(err)
		}
		if worker != 0 {
			if err := pub.PublishResponse(ctx, &schemas.ResponseEvent{RequestID: id, SessionID: id, Model: "sim/model",
				WorkerID: worker, FinishReason: "stop", OutputTokenIDs: []uint32{1, 2}, CompletedAtMs: at}); err != nil {
				t.Fatal(err)
			}
		}
		if err := pub.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		waitPast(t, at)
	}
	w0, w1 := cl.Workers[0].Record.WorkerID, cl.Workers[1].Record.WorkerID

	serve(0, a) // before the window: only the lookback sees it
	waitPast(t, time.Now().UnixMilli())
	since := time.Now()
	waitPast(t, since.UnixMilli())
	request(append(append([]uint32{}, a...), prompt(9, 200)...), w0) // a's 3 blocks on worker 0
	request(a, w1)                                                   // nothing on worker 1
	serve(0, b)                                                      // evicts a from worker 0
	request(a, w0)                                                   // gone
	request(b, w0)                                                   // b's 3 blocks
	request(b, 0)                                                    // no response: not counted
	waitPast(t, time.Now().UnixMilli())

	before := counts(t, js)
	ss, err := FromStreams(ctx, js, Window{Streams: streams.DefaultSet(), Since: since})
	if err != nil {
		t.Fatal(err)
	}
	o := ss.Observed
	wantPrompt := int64(3*512+200) + 3*512*3
	if o.Requests != 4 || o.Unserved != 1 || o.PromptTokens != wantPrompt || o.DeviceHitTokens != 2*3*512 {
		t.Fatalf("observed %+v; want 4 served requests, 1 unserved, %d prompt tokens, %d device hits", o, wantPrompt, 2*3*512)
	}
	if ss.Events["kv_events_lookback"] == 0 || ss.Events["kv_events"] == 0 || o.KVEvents != ss.Events["kv_events_lookback"]+ss.Events["kv_events"] {
		t.Fatalf("KV events %v, applied %d", ss.Events, o.KVEvents)
	}
	if want := float64(2*3*512) / float64(wantPrompt); math.Abs(float64(o.Share)-want) > 1e-12 {
		t.Fatalf("share %v, want %v", o.Share, want)
	}

	// Without the lookback, worker 0's cache at --since is unknown: the
	// first request finds nothing.
	none, err := FromStreams(ctx, js, Window{Streams: streams.DefaultSet(), Since: since, KVLookback: -1})
	if err != nil {
		t.Fatal(err)
	}
	if none.Observed.DeviceHitTokens != 3*512 || none.Events["kv_events_lookback"] != 0 {
		t.Fatalf("without lookback: %+v, events %v", none.Observed, none.Events)
	}
	for name, c := range before {
		if after := counts(t, js)[name]; after != c {
			t.Fatalf("stream %s changed while whatif read it: %d → %d", name, c, after)
		}
	}

	// The report puts it beside the simulated runs.
	rep, err := Run(ctx, ss.Source, Options{Cluster: small(), Policies: nil})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := rep.Text(&text); err != nil {
		t.Fatal(err)
	}
	if rep.Observed == nil || !strings.Contains(text.String(), "observed on the cluster") ||
		!strings.Contains(text.String(), "simulated device hits: no hints") {
		t.Fatalf("report: %s", text.String())
	}
}
