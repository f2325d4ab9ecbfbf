package engine

import (
	"testing"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/internal/metricstest"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// TestHoldingAdmitsRegisteredRanksOnly is issue 26 finding 3, first case:
// a registered worker with one hint endpoint publishes on dp ranks
// 0..65535. Only rank 0 reaches the index, the rest are counted and one in
// SampleEvery is returned to be dead-lettered, and a worker registered
// afterwards is indexed.
// TestHoldingHeldRanksFollowTheRecord: events held before the record is
// written are applied only on the ranks it lists.
// TestLoadAdmitsRegisteredRanksOnly is finding 3, second case: 65,546
// reports for an unregistered worker, and some on ranks a registered one
// does not have, leave the load table to the registered ranks; a busy
// worker's report is kept and counts against it.
func TestLoadAdmitsRegisteredRanksOnly(t *testing.T) {
	ix := index.New()
	c := metrics.New()
	h := index.NewHolding(ix, index.HoldingConfig{}, c)
	loads := routing.NewLoadTable()
	e, err := NewEngine(Decisions{}, EngineDeps{Index: ix, Holding: h, Loads: loads, Counters: c})
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
	if got := metricstest.Get(c, "hintstream_load_refused_total|"+index.ReasonUnknownWorker); got != 65546 {
		t.Fatalf("refused (unknown worker) %d, want 65546", got)
	}
	if got := metricstest.Get(c, "hintstream_load_refused_total|"+index.ReasonRankOutOfRange); got != 1 {
		t.Fatalf("refused (rank) %d, want 1", got)
	}
}

// TestHoldingPruneDropsUnlistedRanks: a snapshot saved during a dp-rank
// flood keeps its pairs; Prune, once the registry is loaded, removes the
// ranks the worker's record does not list.
