package engine

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/metricstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// storedPrompt is worker id's stored event of the blocks of tokens (block
// size 16), external hashes base+i.
func storedPrompt(id uint64, tokens []uint32, base uint64) kvevents.Event {
	local := kvevents.LocalBlockHashes(tokens, 16)
	ev := kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: id}, Kind: schemas.KindStored}
	for i, h := range local {
		ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: base + uint64(i), LocalHash: h})
	}
	return ev
}

func promptTokens(seed uint32, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = seed*1000003 + uint32(i)
	}
	return t
}

// A flood of 100,000 unregistered ids stays in a bounded area, is counted
// and sampled, never reaches the index, and a registered worker is
// indexed afterwards.
func TestHoldingFloodThenRegisteredWorker(t *testing.T) {
	ix := index.New()
	c := metrics.New()
	h := NewHolding(ix, HoldingConfig{}, c)
	flood := storedPrompt(0, promptTokens(1, 32), 1)
	samples := 0
	for id := uint64(1_000_000); id < 1_100_000; id++ {
		flood.Worker.WorkerID = id
		err := h.Apply(flood)
		var uw *UnknownWorkerError
		switch {
		case errors.Is(err, ErrHeld):
		case errors.As(err, &uw):
			if !uw.Held || uw.Dropped != 1 {
				t.Fatalf("eviction %+v, want the new id held and one event dropped", uw)
			}
			if uw.Sample {
				samples++
			}
		default:
			t.Fatalf("flood event: %v", err)
		}
	}
	if st := h.Stats(); st.Workers != DefaultHoldingWorkers || st.Events != DefaultHoldingWorkers {
		t.Fatalf("holding area %+v, want %d workers of one event", st, DefaultHoldingWorkers)
	}
	if n := ix.Stats().Workers; n != 0 {
		t.Fatalf("index tracks %d flood workers, want 0", n)
	}
	wantDropped := uint64(100_000 - DefaultHoldingWorkers)
	if got := metricstest.Get(c, "hintstream_kv_events_dropped_total|"+ReasonUnknownWorker); got != wantDropped {
		t.Fatalf("dropped %d, want %d", got, wantDropped)
	}
	if want := int((wantDropped + DefaultHoldingSampleEvery - 1) / DefaultHoldingSampleEvery); samples != want {
		t.Fatalf("%d samples, want %d", samples, want)
	}

	// The real worker publishes before it registers (held), then after.
	tokens := promptTokens(7, 64)
	ev := storedPrompt(7, tokens[:32], 100)
	if err := h.Apply(ev); !errors.Is(err, ErrUnknownWorker) && !errors.Is(err, ErrHeld) {
		t.Fatal(err)
	}
	if n := h.Register(7, 1); n != 1 {
		t.Fatalf("promoted %d events, want 1", n)
	}
	second := storedPrompt(7, tokens, 100) // all four blocks; the first two again
	parent := uint64(101)
	second.ParentHash, second.Blocks = &parent, second.Blocks[2:]
	if err := h.Apply(second); err != nil {
		t.Fatal(err)
	}
	got := ix.Overlap(kvevents.PromptHashes(tokens, 16))
	if len(got) != 1 || got[kvevents.WorkerKey{WorkerID: 7}] != 4 {
		t.Fatalf("overlap %v, want worker 7 alone with 4 blocks", got)
	}
	if n := ix.Stats().Workers; n != 1 {
		t.Fatalf("index tracks %d workers, want 1", n)
	}
}

// Held events keep their order and their per-worker bound; a worker that
// leaves takes its blocks along and is held again.
func TestHoldingPerWorkerCapAndUnregister(t *testing.T) {
	ix := index.New()
	c := metrics.New()
	h := NewHolding(ix, HoldingConfig{MaxWorkers: 2, MaxBlocksPerWorker: 4}, c)
	tokens := promptTokens(3, 96) // six blocks
	first := storedPrompt(9, tokens[:32], 1)
	if err := h.Apply(first); !errors.Is(err, ErrHeld) {
		t.Fatalf("first: %v, want held", err)
	}
	rest := storedPrompt(9, tokens[:64], 1)
	p := uint64(2)
	rest.ParentHash, rest.Blocks = &p, rest.Blocks[2:]
	if err := h.Apply(rest); !errors.Is(err, ErrHeld) {
		t.Fatalf("second: %v, want held", err)
	}
	over := storedPrompt(9, tokens, 1)
	p2 := uint64(4)
	over.ParentHash, over.Blocks = &p2, over.Blocks[4:]
	var uw *UnknownWorkerError
	if err := h.Apply(over); !errors.As(err, &uw) || uw.Held || !uw.Sample {
		t.Fatalf("over the cap: %v, want dropped (and sampled, the first)", err)
	}
	if h.Register(9, 1) != 2 {
		t.Fatal("want two events promoted")
	}
	k := kvevents.WorkerKey{WorkerID: 9}
	if got := ix.Overlap(kvevents.PromptHashes(tokens, 16))[k]; got != 4 {
		t.Fatalf("overlap %d, want the 4 held blocks, in order", got)
	}
	h.Unregister(9)
	if ix.Stats().Workers != 0 {
		t.Fatal("unregistered worker still indexed")
	}
	if err := h.Apply(first); !errors.Is(err, ErrHeld) {
		t.Fatalf("after leaving: %v, want held", err)
	}
}

// Prune drops a loaded index's workers that the registry does not list.
func TestHoldingPrune(t *testing.T) {
	ix := index.New()
	for _, id := range []uint64{1, 2, 3} {
		if err := ix.Apply(storedPrompt(id, promptTokens(1, 16), 1)); err != nil {
			t.Fatal(err)
		}
	}
	h := NewHolding(ix, HoldingConfig{}, nil)
	h.Register(2, 1)
	if gone := h.Prune(); len(gone) != 2 || gone[0] != 1 || gone[1] != 3 {
		t.Fatalf("pruned %v, want [1 3]", gone)
	}
	if ws := ix.Workers(); len(ws) != 1 || ws[0].WorkerID != 2 {
		t.Fatalf("index workers %v, want [2]", ws)
	}
}

// Events held for an unregistered worker own their memory: the decode
// scratch Engine.KV reuses (kvScratch) is overwritten by the messages
// after them, and promoting the held events still indexes exactly what
// they said, chained on each other (a held event pointing into the
// scratch would index another worker's blocks, and its successor's
// parent would be unknown).
func TestHeldEventsOutliveTheDecodeScratch(t *testing.T) {
	for _, format := range []struct {
		name string
		msgs []Message
	}{{"json", kvBenchMessages(t, 8)}, {"msgpack", kvEngineBenchMessages(8)}} {
		t.Run(format.name, func(t *testing.T) {
			ix := index.New()
			h := NewHolding(ix, HoldingConfig{}, nil)
			for id := uint64(2); id <= 4; id++ {
				h.Register(id, 1)
			}
			e, err := NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: ix, KV: h,
				Workers: workers{}, Sender: actions.NewRecorder(nil, nil)})
			if err != nil {
				t.Fatal(err)
			}
			sc := new(kvScratch) // one scratch for every message, as a pooled one usually is
			for i, m := range format.msgs {
				b, err := decodeKV(e.d.Limits, m, nil, sc)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				if err := e.ApplyKV(b); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			if st := h.Stats(); st.Workers != 1 || st.Events != 2 {
				t.Fatalf("holding %+v, want worker 1's 2 events", st)
			}
			if n := h.Register(1, 1); n != 2 {
				t.Fatalf("promoted %d events, want 2", n)
			}
			if st := ix.Stats(); st.UnknownParent != 0 || st.Entries != 8*4 || st.Workers != 4 {
				t.Fatalf("index %+v, want 32 entries of 4 workers and no unknown parent", st)
			}
			if format.name != "msgpack" {
				return
			}
			// Worker 1's two batches (messages 0 and 4) are one prompt.
			var prompt []uint32
			for _, i := range []int{0, 4} {
				for tk := range 64 {
					prompt = append(prompt, uint32(i*7+tk*1000))
				}
			}
			got := ix.Overlap(kvevents.PromptHashes(prompt, 16))
			if got[kvevents.WorkerKey{WorkerID: 1}] != 8 {
				t.Fatalf("overlap %v, want worker 1 with all 8 blocks", got)
			}
		})
	}
}
