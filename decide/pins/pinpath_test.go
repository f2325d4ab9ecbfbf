package pins

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// requestsInMemory is a RequestStore over a map, as a replay keeps one.
type requestsInMemory struct {
	mu   sync.Mutex
	reqs map[string]*schemas.RequestEvent
	ents map[string]IndexEntry
}

func (m *requestsInMemory) Put(_ context.Context, req *schemas.RequestEvent, e IndexEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs[req.RequestID], m.ents[req.RequestID] = req, e
	return nil
}

func (m *requestsInMemory) Entry(_ context.Context, id string) (IndexEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.ents[id]
	if !ok {
		return IndexEntry{}, ErrRequestNotFound
	}
	return e, nil
}

func (m *requestsInMemory) Request(_ context.Context, id string, _ IndexEntry) (*schemas.RequestEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.reqs[id]; ok {
		return r, nil
	}
	return nil, ErrRequestNotFound
}

type oneWorker map[uint64]schemas.WorkerRecord

func (w oneWorker) Get(id uint64) (schemas.WorkerRecord, bool) { r, ok := w[id]; return r, ok }

func suffixLayout(pageSize uint32, n int) *schemas.ObjectLayout {
	sufs := make([]string, n)
	for i := range sufs {
		sufs[i] = fmt.Sprintf("_%d_k", i)
	}
	return &schemas.ObjectLayout{PageSize: pageSize, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: "m", Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: sufs}}}}
}

// TestPinPathBounded (issue 26, findings 2 and 6) through OnResponse,
// with a real slot bucket and a real pin socket: the crafted layout's
// pin is cut to one page and counted; a layout whose one page is over
// the cap gives no pin; an announced tool time past int64's ms range
// gives a 24 h pin; each pin carries its slot record's revision.
func TestPinPathBounded(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	slots, err := OpenPinSlots(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	ep, got := pinSink(t)
	pool := senderPool(t)
	p := New(Config{}, Deps{Endpoint: ep, Slots: slots, Sender: pool, Counters: metrics.New(), Log: discard(),
		Index: &requestsInMemory{reqs: map[string]*schemas.RequestEvent{}, ents: map[string]IndexEntry{}},
		Workers: oneWorker{1: {WorkerID: 1, ObjectLayout: suffixLayout(1, 20000)}, 2: {WorkerID: 2, ObjectLayout: suffixLayout(1, 40000)},
			3: {WorkerID: 3, ObjectLayout: suffixLayout(16, 2)}}})
	p.Learner = tooltime.New(tooltime.DefaultConfig())
	prompt := make([]uint32, 5000)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	respond := func(id string, worker uint64, headers map[string]string) bool {
		t.Helper()
		if err := p.OnRequest(ctx, 1, time.Now(), &schemas.RequestEvent{RequestID: id, SessionID: "s-" + id, TokenIDs: prompt, Headers: headers}); err != nil {
			t.Fatal(err)
		}
		queued, err := p.OnResponse(ctx, &schemas.ResponseEvent{RequestID: id, SessionID: "s-" + id, WorkerID: worker,
			FinishReason: "tool_calls", CompletedAtMs: time.Now().UnixMilli()}, Arrival{Time: time.Now(), Delivered: 1})
		if err != nil {
			t.Fatal(err)
		}
		return queued
	}
	next := func() schemas.PinPayload { t.Helper(); return nextPin(t, got) }
	if !respond("crafted", 1, nil) {
		t.Fatal("crafted layout: no pin queued")
	}
	if pl := next(); len(pl.Keys) != 20000 || pl.Revision == 0 || pl.Tokens != 1 {
		t.Fatalf("crafted layout: %d keys, tokens %d, revision %d; want one page of 20000 keys with a revision", len(pl.Keys), pl.Tokens, pl.Revision)
	}
	if c := p.Counters.PinsCut.Value(); c != 1 {
		t.Fatalf("pins.cut %d, want 1", c)
	}
	if respond("over", 2, nil) || p.Counters.HintsPinSkipped.Value("over_cap") != 1 {
		t.Fatalf("one page over the cap: skipped %d", p.Counters.HintsPinSkipped.Value("over_cap"))
	}
	if !respond("long-tool", 3, map[string]string{schemas.HeaderSimToolCall: "9223372036855"}) {
		t.Fatal("announced tool: no pin")
	}
	if pl := next(); pl.TTLMs != actions.MaxPinTTL.Milliseconds() {
		t.Fatalf("tool time 9,223,372,036,855 ms: ttl_ms %d, want the 24 h cap", pl.TTLMs)
	}
	if !respond("huge-tool", 3, map[string]string{schemas.HeaderSimToolCall: "99999999999999999999"}) {
		t.Fatal("announced tool past int64: no pin")
	}
	if pl := next(); pl.TTLMs != actions.MaxPinTTL.Milliseconds() {
		t.Fatalf("tool time past int64: ttl_ms %d, want the 24 h cap", pl.TTLMs)
	}
}
