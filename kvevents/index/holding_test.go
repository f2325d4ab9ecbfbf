package index

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/internal/metricstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

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

func TestHoldingFloodThenRegisteredWorker(t *testing.T) {
	ix := New()
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

func TestHoldingPerWorkerCapAndUnregister(t *testing.T) {
	ix := New()
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

func TestHoldingPrune(t *testing.T) {
	ix := New()
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

func TestHoldingAdmitsRegisteredRanksOnly(t *testing.T) {
	ix := New()
	c := metrics.New()
	h := NewHolding(ix, HoldingConfig{}, c)
	h.Register(1, 1)
	ev := storedPrompt(1, promptTokens(1, 32), 1)
	samples := 0
	for rank := uint32(0); rank <= 65535; rank++ {
		ev.Worker.DpRank = rank
		err := h.Apply(ev)
		var re *RankError
		switch {
		case rank == 0 && err == nil:
		case rank > 0 && errors.As(err, &re):
			if re.Key.DpRank != rank || re.Ranks != 1 {
				t.Fatalf("refusal %+v for rank %d", re, rank)
			}
			if re.Sample {
				samples++
			}
		default:
			t.Fatalf("rank %d: %v", rank, err)
		}
	}
	if n := ix.Stats().Workers; n != 1 {
		t.Fatalf("index tracks %d pairs, want 1", n)
	}
	if got := metricstest.Get(c, "hintstream_kv_events_dropped_total|"+ReasonRankOutOfRange); got != 65535 {
		t.Fatalf("refused %d, want 65535", got)
	}
	if want := (65535 + DefaultHoldingSampleEvery - 1) / DefaultHoldingSampleEvery; samples != want {
		t.Fatalf("%d samples, want %d", samples, want)
	}
	h.Register(2, 2)
	tokens := promptTokens(2, 32)
	if err := h.Apply(storedPrompt(2, tokens, 1)); err != nil {
		t.Fatalf("a later worker refused: %v", err)
	}
	if ov := ix.Overlap(kvevents.PromptHashes(tokens, 16)); ov[kvevents.WorkerKey{WorkerID: 2}] != 2 {
		t.Fatalf("later worker's overlap %v", ov)
	}

	// A record that lists fewer ranks forgets the others.
	ev2 := storedPrompt(2, tokens, 2)
	ev2.Worker.DpRank = 1
	if err := h.Apply(ev2); err != nil {
		t.Fatal(err)
	}
	h.Register(2, 1)
	for _, k := range ix.Workers() {
		if k.WorkerID == 2 && k.DpRank != 0 {
			t.Fatalf("rank %d kept after the record dropped it", k.DpRank)
		}
	}
}

func TestHoldingHeldRanksFollowTheRecord(t *testing.T) {
	ix := New()
	c := metrics.New()
	h := NewHolding(ix, HoldingConfig{}, c)
	for rank := uint32(0); rank < 4; rank++ {
		ev := storedPrompt(5, promptTokens(rank+10, 16), uint64(rank)+1)
		ev.Worker.DpRank = rank
		if err := h.Apply(ev); !errors.Is(err, ErrHeld) {
			t.Fatal(err)
		}
	}
	if n := h.Register(5, 2); n != 4 {
		t.Fatalf("promoted %d, want 4 looked at", n)
	}
	if n := ix.Stats().Workers; n != 2 {
		t.Fatalf("index tracks %d pairs, want ranks 0 and 1", n)
	}
	if got := metricstest.Get(c, "hintstream_kv_events_dropped_total|"+ReasonRankOutOfRange); got != 2 {
		t.Fatalf("refused %d held events, want 2", got)
	}
}

func TestHoldingPruneDropsUnlistedRanks(t *testing.T) {
	ix := New()
	for rank := uint32(0); rank < 10; rank++ {
		ev := storedPrompt(1, promptTokens(1, 16), 1)
		ev.Worker.DpRank = rank
		if err := ix.Apply(ev); err != nil { // as a loaded snapshot holds them
			t.Fatal(err)
		}
	}
	h := NewHolding(ix, HoldingConfig{}, nil)
	h.Register(1, 2)
	if gone := h.Prune(); len(gone) != 0 {
		t.Fatalf("pruned workers %v, want none (worker 1 is registered)", gone)
	}
	if ws := ix.Workers(); len(ws) != 2 || ws[0].DpRank != 0 || ws[1].DpRank != 1 {
		t.Fatalf("pairs after Prune %v, want ranks 0 and 1", ws)
	}
}
