package pins

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// TestPinBudgetReleasesTheLatestReturn through OnRequest and OnResponse,
// with a real slot bucket and a real pin socket: three 160-token pins
// against a 400-token budget. The third releases the pin of the call
// expected back last (a crawl, whose gaps are minutes, not the fetches
// of seconds), with a revision after its pin's; that pin is not renewed
// again while the others are; the budget counts what stays, and stops
// counting a pin at its session's next turn.
func TestPinBudgetReleasesTheLatestReturn(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Now()}
	handed := &handedSender{at: map[string][]time.Time{}}
	p, got := budgetPinning(t, Config{RenewMax: 10 * time.Minute, BudgetTokens: 400}, clock.now, handed)
	p.Learner = tooltime.New(tooltime.DefaultConfig())
	for i := range 30 {
		p.Learner.Observe("fetch", time.Duration(1+i%10)*time.Second) // 1..10 s
		p.Learner.Observe("crawl", time.Duration(1+i%3)*time.Minute)  // 1..3 min
	}
	prompt := make([]uint32, 160) // ten 16-token pages
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	respond := func(session, tool string) {
		t.Helper()
		id := "r-" + session
		if err := p.OnRequest(ctx, 1, clock.now(), &schemas.RequestEvent{RequestID: id, SessionID: session, TokenIDs: prompt,
			ReceivedAtMs: clock.now().UnixMilli()}); err != nil {
			t.Fatal(err)
		}
		queued, err := p.OnResponse(ctx, &schemas.ResponseEvent{RequestID: id, SessionID: session, WorkerID: 1,
			FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: tool}}, CompletedAtMs: clock.now().UnixMilli()},
			Arrival{Time: clock.now(), Delivered: 1})
		if err != nil || !queued {
			t.Fatalf("%s: queued %v, err %v", session, queued, err)
		}
	}
	next := func() schemas.PinPayload { t.Helper(); return nextPin(t, got) }
	respond("a", "fetch")
	clock.add(time.Second)
	respond("b", "crawl")
	clock.add(time.Second)
	if u := p.BudgetUsed(); u != 320 {
		t.Fatalf("two pins: budget used %d, want 320", u)
	}
	respond("c", "fetch")
	pins := map[string]schemas.PinPayload{}
	for range 3 {
		pl := next()
		pins[pl.Slot] = pl
	}
	rel := next()
	if rel.Slot != "session:b" || rel.TTLMs != 0 || rel.Revision <= pins["session:b"].Revision {
		t.Fatalf("release %+v after b's pin at revision %d: want b's slot, TTL 0, a later revision", rel, pins["session:b"].Revision)
	}
	if u, n := p.BudgetUsed(), p.Counters.PinsBudgetReleased.Value(); u != 320 || n != 1 {
		t.Fatalf("after the release: used %d, released %d; want 320 and 1", u, n)
	}
	// Past half of every TTL (b's is minutes): a and c are renewed, b is
	// not. Tick renews on this goroutine: what it sent is handed over
	// when it returns.
	sends := func(slot string) int {
		handed.mu.Lock()
		defer handed.mu.Unlock()
		return len(handed.at[slot])
	}
	before := map[string]int{"a": sends("session:a"), "b": sends("session:b"), "c": sends("session:c")}
	clock.add(5 * time.Minute)
	p.Tick(ctx, clock.now())
	if sends("session:a") != before["a"]+1 || sends("session:c") != before["c"]+1 || sends("session:b") != before["b"] {
		t.Fatalf("sends before %v, after a %d b %d c %d: want one renewal each of a and c, none of b",
			before, sends("session:a"), sends("session:b"), sends("session:c"))
	}
	for range 2 {
		if pl := next(); pl.TTLMs <= 0 || pl.Slot == "session:b" {
			t.Fatalf("renewal %+v: want a's or c's, with a TTL", pl)
		}
	}
	// a's next turn: its pin no longer counts.
	if err := p.OnRequest(ctx, 2, clock.now(), &schemas.RequestEvent{RequestID: "r-a2", SessionID: "a", TokenIDs: prompt,
		ReceivedAtMs: clock.now().UnixMilli()}); err != nil {
		t.Fatal(err)
	}
	if u := p.BudgetUsed(); u != 160 {
		t.Fatalf("after a's next turn: used %d, want 160", u)
	}
}

// A pin larger than the whole budget stays (there is nothing better to
// keep), and releases every other.
func TestPinBudgetKeepsAPinLargerThanTheBudget(t *testing.T) {
	ctx := context.Background()
	p, got := budgetPinning(t, Config{BudgetTokens: 100}, nil, &handedSender{at: map[string][]time.Time{}})
	for i, n := range []int{64, 160} {
		s := []string{"small", "large"}[i]
		prompt := make([]uint32, n)
		if err := p.OnRequest(ctx, uint64(i+1), time.Now(), &schemas.RequestEvent{RequestID: "r-" + s, SessionID: s, TokenIDs: prompt}); err != nil {
			t.Fatal(err)
		}
		if queued, err := p.OnResponse(ctx, &schemas.ResponseEvent{RequestID: "r-" + s, SessionID: s, WorkerID: 1,
			FinishReason: "tool_calls", CompletedAtMs: time.Now().UnixMilli()}, Arrival{Time: time.Now(), Delivered: 1}); err != nil || !queued {
			t.Fatalf("%s: queued %v, err %v", s, queued, err)
		}
	}
	var slotsSeen []string
	for range 3 {
		select {
		case pl := <-got:
			slotsSeen = append(slotsSeen, pl.Slot)
			if pl.TTLMs == 0 && pl.Slot != "session:small" {
				t.Fatalf("released %s, want small", pl.Slot)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("pins seen %v, want small's pin, large's and small's release", slotsSeen)
		}
	}
	if u := p.BudgetUsed(); u != 160 {
		t.Fatalf("used %d, want the large pin's 160", u)
	}
}

// budgetPinning is a Pinning of cfg over a real slot bucket and a real
// pin socket (whose pins it returns), one worker of 16-token pages, and
// the clock now (nil: time.Now); handed wraps the sender pool.
func budgetPinning(t *testing.T, cfg Config, now func() time.Time, handed *handedSender) (*Pinning, <-chan schemas.PinPayload) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	slots, err := OpenPinSlots(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	ep, got := pinSink(t)
	handed.Sender = senderPool(t)
	return New(cfg, Deps{Endpoint: ep, Slots: slots, Sender: handed, Counters: metrics.New(), Log: discard(), Now: now,
		Index:   &requestsInMemory{reqs: map[string]*schemas.RequestEvent{}, ents: map[string]IndexEntry{}},
		Workers: oneWorker{1: {WorkerID: 1, ObjectLayout: suffixLayout(16, 2)}}}), got
}
