package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// setup starts a server with the default streams and registers worker
// 1 (model "m", 16-token blocks) with layout, which may be nil.
func setup(t *testing.T, layout *schemas.ObjectLayout) (context.Context, jetstream.JetStream, streams.Set) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:9"}, ObjectLayout: layout}); err != nil {
		t.Fatal(err)
	}
	return ctx, js, set
}

func TestFromSeqAndUntil(t *testing.T) {
	ctx, js, set := setup(t, nil)
	var seqs []uint64
	var times []time.Time
	for i := range 4 {
		b, _ := json.Marshal(schemas.RequestEvent{RequestID: fmt.Sprintf("q-%d", i), Model: "m", TokenIDs: make([]uint32, 32),
			Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
		ack, err := js.Publish(ctx, streams.RequestSubject("m"), b)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := js.Stream(ctx, set.Requests.Name)
		m, err := s.GetMsg(ctx, ack.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		seqs, times = append(seqs, ack.Sequence), append(times, m.Time)
	}
	run := func(o Options) []string {
		t.Helper()
		var out bytes.Buffer
		o.Streams, o.DryRun, o.Out = set, true, &out
		rc := routing.DefaultConfig()
		o.Routing, o.PrefetchTTL = &rc, time.Minute
		o.PinTTL, o.ToolTime = actions.DefaultTTLConfig(), tooltime.DefaultConfig()
		sum, err := Run(ctx, js, o)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l == "" {
				continue
			}
			var r actions.HintRecord
			var p struct {
				RequestID string `json:"request_id"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal(r.Payload, &p)
			ids = append(ids, p.RequestID)
		}
		if sum.Hints["prefetch"] != uint64(len(ids)) {
			t.Fatalf("summary says %d prefetches, output has %d", sum.Hints["prefetch"], len(ids))
		}
		return ids
	}
	if got := run(Options{FromSeq: seqs[1]}); strings.Join(got, ",") != "q-1,q-2,q-3" {
		t.Fatalf("--from-seq: %v", got)
	}
	if got := run(Options{Since: times[0], Until: times[2]}); strings.Join(got, ",") != "q-0,q-1,q-2" {
		t.Fatalf("--since/--until: %v", got)
	}
	if got := run(Options{Since: times[3].Add(time.Hour)}); len(got) != 0 {
		t.Fatalf("since after the last request: %v", got)
	}
}

func TestProgressBar(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, c := range []struct {
		at   time.Duration
		want string
	}{{0, "[..............................]   0%"}, {50 * time.Second, "[###############...............]  50%"},
		{100 * time.Second, "[##############################] 100%"}, {200 * time.Second, "[##############################] 100%"}} {
		if got := bar(t0, t0.Add(c.at), t0.Add(100*time.Second)); got != c.want {
			t.Errorf("at %v: %q, want %q", c.at, got, c.want)
		}
	}
}

// TestReplayRenewsPinsOnEventTime: a tool call whose session is still out
// when a later event (another session's request stamped 40 s on) is
// replayed gets its pin renewed, on the events' clock, however fast the
// replay runs; with renewals off (NoPinRenewal, here run(-1), as in run's
// Config) it does not.
func TestReplayRenewsPinsOnEventTime(t *testing.T) {
	ctx, js, set := setup(t, &schemas.ObjectLayout{PageSize: 16, HicacheObjectLayout: schemas.HicacheObjectLayout{KeyPrefix: "p",
		Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_k"}, HitPolicy: "all_pages"}}}})
	t0 := time.Now().Truncate(time.Millisecond)
	pub := func(subject string, v any) {
		b, _ := json.Marshal(v)
		if _, err := js.Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
	}
	pub(streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "s1", SessionID: "s", Model: "m",
		TokenIDs: make([]uint32, 32), ReceivedAtMs: t0.UnixMilli()})
	pub(streams.ResponseSubject("m"), schemas.ResponseEvent{RequestID: "s1", SessionID: "s", WorkerID: 1,
		FinishReason: "tool_calls", CompletedAtMs: t0.Add(time.Second).UnixMilli()})
	pub(streams.RequestSubject("m"), schemas.RequestEvent{RequestID: "o1", SessionID: "o", Model: "m",
		TokenIDs: make([]uint32, 32), ReceivedAtMs: t0.Add(41 * time.Second).UnixMilli()})

	run := func(renewMax time.Duration) (Summary, []schemas.PinPayload) {
		t.Helper()
		var out bytes.Buffer
		rc := routing.DefaultConfig()
		sum, err := Run(ctx, js, Options{Streams: set, DryRun: true, Out: &out, PinEndpoint: "tcp://127.0.0.1:9",
			Decisions: engine.Decisions{Routing: &rc, PrefetchTTL: time.Minute, PinTTL: actions.DefaultTTLConfig(),
				ToolTime: tooltime.DefaultConfig(), PinRenewMax: max(renewMax, 0), NoPinRenewal: renewMax < 0}, Since: t0.Add(-time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		var pins []schemas.PinPayload
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			var r actions.HintRecord
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			var p schemas.PinPayload
			if r.ActionType == actions.ActionPin && json.Unmarshal(r.Payload, &p) == nil {
				pins = append(pins, p)
			}
		}
		return sum, pins
	}
	sum, pins := run(10 * time.Minute)
	if sum.Hints["pin"] != 1 || sum.Hints["renew"] != 1 || len(pins) != 2 ||
		pins[0].Slot != "session:s" || pins[1].Slot != "session:s" || pins[1].TTLMs != 50000 {
		t.Fatalf("with renewals: hints %v, pins %+v", sum.Hints, pins)
	}
	if sum, pins := run(-1); sum.Hints["renew"] != 0 || len(pins) != 1 {
		t.Fatalf("without renewals: hints %v, pins %+v", sum.Hints, pins)
	}
}
