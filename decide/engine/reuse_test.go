package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// The engine decodes requests into reused events and encodes prefetches
// into recycled buffers (issue 17). Neither may mix one request into
// another: every prefetch carries its own wake-up's prompt, and every
// turn the pins keep stays as it was decoded, whatever came after it.
func TestEngineReusesMemoryWithoutMixingRequests(t *testing.T) {
	var out bytes.Buffer
	stored := &mapRequests{reqs: map[string]*schemas.RequestEvent{}}
	e, err := NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: index.New(),
		Workers: workers{{WorkerID: 1, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:9"}}},
		Sender:  actions.NewRecorder(&out, nil),
		Pins:    &pins.Deps{Endpoint: "tcp://127.0.0.1:8", Index: stored}})
	if err != nil {
		t.Fatal(err)
	}
	prompt := func(i int) []uint32 {
		p := make([]uint32, []int{2048, 16, 4096, 1, 300}[i%5])
		for k := range p {
			p[k] = uint32(i*100000 + k)
		}
		return p
	}
	wakes, turns := map[string][]uint32{}, map[string][]uint32{}
	ctx := context.Background()
	for i := range 60 {
		ev := schemas.RequestEvent{RequestID: fmt.Sprint("r-", i), Model: "m", TokenIDs: prompt(i)}
		if i%3 != 2 {
			// Turns have no session: these pins have no slot store.
			ev.SessionID, ev.Headers = fmt.Sprint("s-", i%7), map[string]string{schemas.HeaderWakeup: "1"}
			wakes[ev.RequestID] = ev.TokenIDs
		} else {
			turns[ev.RequestID] = ev.TokenIDs
		}
		var data []byte
		ct := "application/json"
		if i%2 == 0 {
			data, err = ev.MarshalMsg(nil)
			ct = "application/msgpack"
		} else {
			data, err = json.Marshal(&ev)
		}
		if err != nil {
			t.Fatal(err)
		}
		m := Message{Subject: "llm.requests.m", Data: data, Header: map[string][]string{"Content-Type": {ct}}}
		if o := e.Request(ctx, Delivery{Seq: uint64(i + 1), Time: time.Now(), Delivered: 1}, m); o.Verdict == Reject {
			t.Fatalf("request %d: %+v", i, o)
		}
	}
	got := 0
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec actions.HintRecord
		var p struct {
			RequestID string   `json:"request_id"`
			TokenIDs  []uint32 `json:"token_ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(rec.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if want, ok := wakes[p.RequestID]; !ok || !slices.Equal(p.TokenIDs, want) {
			t.Fatalf("prefetch for %s carries %d tokens beginning %v, not its own %d", p.RequestID, len(p.TokenIDs),
				p.TokenIDs[:min(3, len(p.TokenIDs))], len(want))
		}
		got++
	}
	if got != len(wakes) {
		t.Fatalf("%d prefetches for %d wake-ups", got, len(wakes))
	}
	stored.mu.Lock()
	defer stored.mu.Unlock()
	if len(stored.reqs) != len(turns) {
		t.Fatalf("the pins hold %d requests, want the %d turns", len(stored.reqs), len(turns))
	}
	for id, req := range stored.reqs {
		if req.RequestID != id || !slices.Equal(req.TokenIDs, turns[id]) {
			t.Fatalf("turn %s the pins hold became %s with %d tokens", id, req.RequestID, len(req.TokenIDs))
		}
	}
}
