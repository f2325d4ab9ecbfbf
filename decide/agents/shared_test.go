package agents

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
)

// Two trackers share one bucket on a real nats-server: A consumes a
// program's request, B its response; C, which saw neither, is given the
// tool events and pins and prefetches the whole turn read back.
func TestSharedContext(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	store, err := OpenContextStore(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	member := func() (*Tracker, *world) {
		tr, w, _ := newTracker(t, DefaultConfig())
		tr.Share(store)
		return tr, w
	}
	a, _ := member()
	b, _ := member()
	c, wc := member()
	req := agentReq("t1", "research", "p1", false)
	req.TokenIDs = []uint32{1, 2, 3, 4, 5, 6}
	a.ObserveRequest(req)
	b.ObserveResponse(&schemas.ResponseEvent{RequestID: "t1", WorkerID: 9, DpRank: 1, FinishReason: "stop",
		OutputTokenIDs: []uint32{7, 8}, NvExt: req.NvExt})
	c.OnRecord(ctx, toolRec(agentevents.ToolStart, "research", "p1", "c1", "web_search", wc.now.UnixMilli(), 0))
	if len(wc.pins) != 1 || wc.pins[0].RequestID != "t1" || wc.pins[0].WorkerID != 9 || len(wc.pins[0].OutputTokenIDs) != 2 {
		t.Fatalf("C's pins %+v, want one of turn t1 on worker 9", wc.pins)
	}
	c.OnRecord(ctx, toolRec(agentevents.ToolEnd, "research", "p1", "c1", "web_search", wc.now.UnixMilli(), 10))
	if len(wc.prefetch) != 1 || len(wc.prefetch[0].TokenIDs) != 8 {
		t.Fatalf("C's prefetches %+v, want one of prompt and response (8 tokens)", wc.prefetch)
	}
	// A turn whose response is not stored yet is not acted on from the
	// bucket: the halves must name one request.
	req2 := agentReq("t2", "research", "p1", false)
	a.ObserveRequest(req2)
	d, wd := member()
	d.OnRecord(ctx, toolRec(agentevents.ToolStart, "research", "p1", "c2", "web_search", wd.now.UnixMilli(), 0))
	if len(wd.pins) != 0 {
		t.Fatalf("D pinned %+v from a half-stored turn", wd.pins)
	}
	// A half of another program under a colliding key is not taken.
	if q, r, err := store.Get(ctx, "w/p-unknown"); err != nil || q != nil || r != nil {
		t.Fatalf("unknown program: %v %v %v", q, r, err)
	}
}

// FuzzDecodeHalf: whatever the bucket holds, decoding never panics and
// only a half naming the program asked for is taken.
func FuzzDecodeHalf(f *testing.F) {
	f.Add([]byte(`{"program":"w/p","request_id":"r","tokens":[1,2,3],"worker_id":9}`), "w/p")
	f.Add([]byte(`{"program":"w/q","tokens":[]}`), "w/p")
	f.Add([]byte(`{"tokens":[-1]}`), "")
	f.Fuzz(func(t *testing.T, b []byte, program string) {
		if h := decodeHalf(b, program); h != nil && (h.Program != program || len(h.Tokens) > DefaultMaxSharedTokens) {
			t.Fatalf("took %+v for %q", h, program)
		}
	})
}
