package pins

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// A salted request's pin names the keys SGLang stores its pages under
// (seeded with the salt), not the unsalted ones; a request naming a LoRA
// adapter gets no pin, since its keys carry a lora_id hintstream cannot
// know.
func TestPinNamesSaltedKeys(t *testing.T) {
	ctx := context.Background()
	ep, got := pinSink(t)
	pool := senderPool(t)
	layout := suffixLayout(4, 2)
	p := New(Config{}, Deps{Endpoint: ep, Sender: pool, Counters: metrics.New(), Log: discard(),
		Index:   &requestsInMemory{reqs: map[string]*schemas.RequestEvent{}, ents: map[string]IndexEntry{}},
		Workers: oneWorker{1: {WorkerID: 1, ObjectLayout: layout}}})
	p.Learner = tooltime.New(tooltime.DefaultConfig())
	prompt := []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9}
	respond := func(req *schemas.RequestEvent) bool {
		t.Helper()
		if err := p.OnRequest(ctx, 1, time.Now(), req); err != nil {
			t.Fatal(err)
		}
		queued, err := p.OnResponse(ctx, &schemas.ResponseEvent{RequestID: req.RequestID, WorkerID: 1,
			FinishReason: "tool_calls", CompletedAtMs: time.Now().UnixMilli()}, Arrival{Time: time.Now(), Delivered: 1})
		if err != nil {
			t.Fatal(err)
		}
		return queued
	}
	if !respond(&schemas.RequestEvent{RequestID: "salted", TokenIDs: prompt, CacheSalt: "tenant-a"}) {
		t.Fatal("salted request: no pin")
	}
	var pl schemas.PinPayload
	select {
	case pl = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no pin within 10s")
	}
	want, _ := actions.ObjectKeysIn(layout, prompt, actions.Namespace{CacheSalt: "tenant-a"})
	plain, _ := actions.ObjectKeys(layout, prompt)
	if !slices.Equal(pl.Keys, want) || slices.Equal(want, plain) {
		t.Fatalf("pin keys %q, want the salted %q (unsalted %q)", pl.Keys, want, plain)
	}
	// extra_key seeds the chain beside cache_salt, as SGLang's
	// storage_namespace_seed takes both.
	if !respond(&schemas.RequestEvent{RequestID: "keyed", TokenIDs: prompt, CacheSalt: "tenant-a", ExtraKey: "k1"}) {
		t.Fatal("request with extra_key: no pin")
	}
	select {
	case pl = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no pin within 10s")
	}
	keyed, _ := actions.ObjectKeysIn(layout, prompt, actions.Namespace{ExtraKey: "k1", CacheSalt: "tenant-a"})
	if !slices.Equal(pl.Keys, keyed) || slices.Equal(keyed, want) {
		t.Fatalf("pin keys %q, want those seeded with extra_key and cache_salt %q (cache_salt alone %q)", pl.Keys, keyed, want)
	}
	if respond(&schemas.RequestEvent{RequestID: "lora", TokenIDs: prompt, LoraName: "adapter-1"}) {
		t.Fatal("LoRA request: pin queued")
	}
	if n := p.Counters.HintsPinSkipped.Value("unknown_namespace"); n != 1 {
		t.Fatalf("skipped unknown_namespace %d, want 1", n)
	}
}

// senderPool is a ZeroMQ pool closed with the test.
func senderPool(t *testing.T) *zmqsend.Pool {
	t.Helper()
	pool, err := zmqsend.NewPool()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = pool.Close(ctx)
	})
	return pool
}
