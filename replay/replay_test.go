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
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/tooltime"
)

func TestFromSeqAndUntil(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := streams.DefaultSet()
	if _, err := streams.EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:9"}}); err != nil {
		t.Fatal(err)
	}
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
		o.Routing, o.PrefetchTTL = routing.DefaultConfig(), time.Minute
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
