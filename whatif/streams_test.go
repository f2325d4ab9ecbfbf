package whatif

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/race"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// embedded starts an embedded JetStream server with nothing on it.
func embedded(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := natsembed.Start(natsembed.Options{StoreDir: t.TempDir(), MaxPayload: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// bus starts an embedded JetStream server with hintstream's streams and
// a registry of four 512-token workers.
func bus(t *testing.T) jetstream.JetStream {
	t.Helper()
	js := embedded(t)
	ctx := context.Background()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet(), streams.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.NewCluster(cluster.Config{Endpoints: []string{"tcp://127.0.0.1:5571", "tcp://127.0.0.1:5572",
		"tcp://127.0.0.1:5573", "tcp://127.0.0.1:5574"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Register(ctx, js, registry.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	return js
}

// counts are the messages every stream on the server holds, by name.
func counts(t *testing.T, js jetstream.JetStream) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	names := js.StreamNames(context.Background())
	for n := range names.Name() {
		s, err := js.Stream(context.Background(), n)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out[n] = info.State.Msgs*1e9 + info.State.LastSeq
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The slice published as a frontend would (requests, wake-ups and
// responses, with one undecodable request) reads back as the trace's
// records; the simulation of both saves the same; and the read left
// every stream as it was.
func TestFromStreamsReadsTheClusterHistory(t *testing.T) {
	js := bus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	src := slice(t)
	w, err := workload.FromRecords(src.Records, workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := client.NewPublisher(js, client.WithFormat(client.Msgpack))
	if err != nil {
		t.Fatal(err)
	}
	epoch := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	since := time.Now()
	for _, ev := range w.Events {
		var err error
		switch ev.Kind {
		case workload.KindRequest:
			err = pub.PublishRequest(ctx, w.RequestEvent(ev.Request, epoch, false))
		case workload.KindWakeup:
			err = pub.PublishRequest(ctx, w.WakeupEvent(ev.Request, epoch))
		case workload.KindResponse:
			err = pub.PublishResponse(ctx, w.ResponseEvent(ev.Request, 1, epoch))
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Request == 3 && ev.Kind == workload.KindRequest {
			if _, err := js.Publish(ctx, streams.RequestSubject("sim/model"), []byte(`{"request_id": 7`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := pub.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	before := counts(t, js)
	win := Window{Streams: streams.DefaultSet(), Since: since}
	if _, err := FromStreams(ctx, js, win); err == nil || !errors.Is(err, workload.ErrBadLine) {
		t.Fatalf("an undecodable request: %v", err)
	}
	win.SkipBad = true
	ss, err := FromStreams(ctx, js, win)
	if err != nil {
		t.Fatal(err)
	}
	if ss.Workers != 4 || ss.BlockSize != 512 || len(ss.Records) != 200 || ss.Skipped != 1 ||
		ss.Events["requests"] != 200+w.Stats().Wakeups+1 || ss.Events["responses"] != 200 {
		t.Fatalf("read %d workers of %d-token blocks, %d records, %d skipped, events %v", ss.Workers, ss.BlockSize,
			len(ss.Records), ss.Skipped, ss.Events)
	}
	for i, r := range ss.Records {
		if r.InputLength != src.Records[i].InputLength || r.OutputLength != src.Records[i].OutputLength {
			t.Fatalf("record %d: %+v, the trace's %+v", i, r, src.Records[i])
		}
	}
	after := counts(t, js)
	for n, c := range before {
		if after[n] != c {
			t.Fatalf("stream %s changed while whatif read it: %d → %d", n, c, after[n])
		}
	}
	c := small()
	var policies []simulate.Policy // every row
	if race.Enabled {              // every row runs without -race (make test's sim pass)
		policies = raceInputPolicies(t)
	}
	// The responses say how each turn ended (finish_reason and the tool,
	// as workload.ResponseEvent publishes them): the records read back
	// carry those facts, and the trace is played with them too.
	for i, r := range ss.Records {
		want := "stop"
		if w.Req(i).ToolCall {
			want = workload.FinishToolCalls
		}
		if r.FinishReason != want || (want == workload.FinishToolCalls) != (r.Tool != "") {
			t.Fatalf("record %d: finish %q tool %q, want %q", i, r.FinishReason, r.Tool, want)
		}
		src.Records[i].FinishReason, src.Records[i].Tool = r.FinishReason, r.Tool
	}
	fromTrace, err := Run(ctx, src, Options{Cluster: c, Policies: policies})
	if err != nil {
		t.Fatal(err)
	}
	fromBus, err := Run(ctx, ss.Source, Options{Cluster: c, Policies: policies})
	if err != nil {
		t.Fatal(err)
	}
	a, b := fromTrace.Points[0].Runs, fromBus.Points[0].Runs
	for k := range a {
		if math.Abs(a[k].Saving-b[k].Saving) > 0.02*math.Max(a[k].Saving, 1) {
			t.Fatalf("%s: %v saved from the trace, %v from the streams", a[k].Name, a[k].Saving, b[k].Saving)
		}
	}
	if math.Abs(float64(fromTrace.Reusable-fromBus.Reusable)) > 1e-9 {
		t.Fatalf("reusable share %v from the trace, %v from the streams", fromTrace.Reusable, fromBus.Reusable)
	}

	// A window with nothing in it says so.
	win.Since = time.Now().Add(time.Hour)
	if _, err := FromStreams(ctx, js, win); !errors.Is(err, ErrEmptyWindow) {
		t.Fatalf("an empty window: %v", err)
	}
}
