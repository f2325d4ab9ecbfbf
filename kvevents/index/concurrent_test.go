package index

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
)

// Writers apply random event streams (and RemoveWorker) for their own
// workers while readers query; every answer must be possible, and the
// final state must equal the models of all writers merged. Run with -race.
func TestConcurrentWritersMatchModel(t *testing.T) {
	const writers, perWriter, events = 6, 4, 1500
	ix := New(WithShards(8), WithLogger(discardLogger()))
	gens := make([]*modelGen, writers)
	for w := range gens {
		g := &modelGen{r: rand.New(rand.NewPCG(uint64(w), 99)), ref: newRefModel(0), ids: map[kvevents.WorkerKey]uint64{}}
		for j := range perWriter {
			// Dp ranks of one worker id belong to one writer, which also
			// removes that worker.
			g.workers = append(g.workers, kvevents.WorkerKey{WorkerID: uint64(w*100 + j/2), DpRank: uint32(j % 2)})
		}
		gens[w] = g
	}

	var readers, writersWG sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, writers+2)
	for r := range 2 {
		readers.Go(func() {
			pg := &modelGen{r: rand.New(rand.NewPCG(uint64(r), 7))}
			for {
				select {
				case <-stop:
					return
				default:
				}
				seq := pg.prompt()
				for k, n := range ix.Overlap(seq) {
					if n < 1 || n > len(seq) || k.WorkerID%100 >= perWriter/2 || k.WorkerID/100 >= writers {
						errs <- fmt.Errorf("impossible overlap %v: %d of %d", k, n, len(seq))
						return
					}
				}
				_ = ix.Stats()
				_ = ix.StaleWorkers()
			}
		})
	}
	for _, g := range gens {
		writersWG.Go(func() {
			for range events {
				if g.r.IntN(150) == 0 {
					id := g.workers[g.r.IntN(len(g.workers))].WorkerID
					ix.RemoveWorker(id)
					g.ref.removeWorker(id)
					continue
				}
				ev := g.event()
				dropped := g.ref.apply(ev)
				if err := ix.Apply(ev); (err != nil) != dropped || (err != nil && !errors.Is(err, ErrUnknownParent)) {
					errs <- fmt.Errorf("Apply(%+v) = %v, model dropped %v", ev, err, dropped)
					return
				}
			}
		})
	}
	writersWG.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	all := newRefModel(0)
	for _, g := range gens {
		maps.Copy(all.workers, g.ref.workers)
		all.entries += g.ref.entries
		all.other += g.ref.other
		all.st.UnknownParent += g.ref.st.UnknownParent
		all.st.UnknownRemovals += g.ref.st.UnknownRemovals
		all.st.Cleared += g.ref.st.Cleared
	}
	if got, want := ix.Stats(), all.stats(slotOf(ix)); got != want {
		t.Fatalf("Stats = %+v, want %+v", got, want)
	}
	q := &modelGen{r: rand.New(rand.NewPCG(5, 5))}
	deep := 0
	for range 300 {
		seq := q.prompt()
		got, want := ix.Overlap(seq), all.overlapJump(seq, ix.jump, slotOf(ix))
		if !maps.Equal(got, want) {
			t.Fatalf("Overlap = %v, want %v", got, want)
		}
		if len(want) > 0 {
			deep++
		}
	}
	if deep < 100 {
		t.Fatalf("only %d of 300 prompts overlap any worker", deep)
	}
}
