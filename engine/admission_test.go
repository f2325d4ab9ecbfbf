package engine

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/internal/metricstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
)

// TestHoldingAdmitsRegisteredRanksOnly is issue 26 finding 3, first case:
// a registered worker with one hint endpoint publishes on dp ranks
// 0..65535. Only rank 0 reaches the index, the rest are counted and one in
// SampleEvery is returned to be dead-lettered, and a worker registered
// afterwards is indexed.
func TestHoldingAdmitsRegisteredRanksOnly(t *testing.T) {
	ix := index.New()
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

// TestHoldingHeldRanksFollowTheRecord: events held before the record is
// written are applied only on the ranks it lists.
func TestHoldingHeldRanksFollowTheRecord(t *testing.T) {
	ix := index.New()
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

// TestLoadAdmitsRegisteredRanksOnly is finding 3, second case: 65,546
// reports for an unregistered worker, and some on ranks a registered one
// does not have, leave the load table to the registered ranks; a busy
// worker's report is kept and counts against it.
func TestLoadAdmitsRegisteredRanksOnly(t *testing.T) {
	ix := index.New()
	c := metrics.New()
	h := NewHolding(ix, HoldingConfig{}, c)
	loads := routing.NewLoadTable()
	e, err := NewEngine(Decisions{}, EngineDeps{Index: ix, KV: h, Loads: loads, Counters: c})
	if err != nil {
		t.Fatal(err)
	}
	h.Register(1, 1)
	one := uint64(1)
	for i := uint32(0); i < 65546; i++ {
		if err := e.ApplyLoad(&schemas.ActiveLoad{WorkerID: 999, DpRank: i, ActiveDecodeBlocks: &one}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.ApplyLoad(&schemas.ActiveLoad{WorkerID: 1, DpRank: 3, ActiveDecodeBlocks: &one}); err != nil {
		t.Fatal(err)
	}
	busy := uint64(50_000)
	if err := e.ApplyLoad(&schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: &busy}); err != nil {
		t.Fatalf("a registered worker's report refused: %v", err)
	}
	if n := loads.Len(); n != 1 {
		t.Fatalf("load table holds %d pairs, want 1", n)
	}
	if l := loads.Get(kvevents.WorkerKey{WorkerID: 1}); l.ActiveDecodeBlocks == nil || *l.ActiveDecodeBlocks != busy {
		t.Fatalf("worker 1's load %+v", l)
	}
	if got := metricstest.Get(c, "hintstream_load_refused_total|"+ReasonUnknownWorker); got != 65546 {
		t.Fatalf("refused (unknown worker) %d, want 65546", got)
	}
	if got := metricstest.Get(c, "hintstream_load_refused_total|"+ReasonRankOutOfRange); got != 1 {
		t.Fatalf("refused (rank) %d, want 1", got)
	}
}

// TestHoldingPruneDropsUnlistedRanks: a snapshot saved during a dp-rank
// flood keeps its pairs; Prune, once the registry is loaded, removes the
// ranks the worker's record does not list.
func TestHoldingPruneDropsUnlistedRanks(t *testing.T) {
	ix := index.New()
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
