package simulate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/whatif/workload"
)

// viaTape is clairvoyant through a tape whose in-memory tail holds
// tail occurrences, so that most next uses are patched in the file.
func viaTape(t *testing.T, seqs [][]uint64, at []int64, capacity, tail int, mustPatch bool) []int {
	t.Helper()
	tp, err := newTape(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer tp.close()
	tp.tailCap = tail
	for i, s := range seqs {
		if err := tp.add(i, s); err != nil {
			t.Fatal(err)
		}
	}
	if mustPatch && tp.patched == 0 {
		t.Fatal("no next use was patched in the file: the test does not cover it")
	}
	rd, err := tp.rewind()
	if err != nil {
		t.Fatal(err)
	}
	hits := make([]int, len(seqs))
	next := 0
	err = clairvoyantTape(rd, len(seqs), func(i int) (int, error) {
		if i != next {
			t.Fatalf("blocks asked of request %d, want %d (in order, once each)", i, next)
		}
		next++
		return len(seqs[i]), nil
	}, func(i int) int64 { return at[i] }, capacity, func(i, n int) error {
		hits[i] = n
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if next != len(seqs) {
		t.Fatalf("blocks asked of %d requests of %d", next, len(seqs))
	}
	return hits
}

// TestTapeBoundEqualsTheInMemoryBound holds the streamed bound to the one
// that builds the whole next-use table: equal hits for every request, on
// random small workloads and on the synthetic trace's first 1,500
// requests at several capacities.
func TestTapeBoundEqualsTheInMemoryBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 27))
	for n := range 200 {
		seqs, at := smallWorkload(rng, 5+rng.IntN(20))
		capacity := rng.IntN(6)
		want := clairvoyant(seqs, at, capacity).hits
		if got := viaTape(t, seqs, at, capacity, 1+rng.IntN(4), false); !slices.Equal(got, want) {
			t.Fatalf("case %d (capacity %d, %v at %v): tape %v, in memory %v", n, capacity, seqs, at, got, want)
		}
	}
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Limit: 1500})
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([][]uint64, len(w.Requests))
	at := make([]int64, len(w.Requests))
	for i := range w.Requests {
		seqs[i] = kvevents.PromptHashes(w.PromptTokens(i), w.BlockSize)
		at[i] = int64(w.Requests[i].At)
	}
	for _, capacity := range []int{0, 64, 1024, 10240, 1 << 30} {
		want := clairvoyant(seqs, at, capacity).hits
		got := viaTape(t, seqs, at, capacity, 16, true)
		if !slices.Equal(got, want) {
			t.Fatalf("capacity %d: the tape's bound differs from the in-memory one", capacity)
		}
		total := 0
		for _, h := range got {
			total += h
		}
		if capacity == 1<<30 && total == 0 {
			t.Fatal("no hit with unbounded capacity: the trace slice shares nothing")
		}
	}
}

// TestTapeBeladyEqualsTheInMemoryOne holds the streamed weighted Belady
// (the hint-reachable bound's) to beladyHits: equal hits for every
// request, with hits worth nothing on a random set of accesses, on
// random small workloads and on the synthetic trace's first 1,500
// requests.
func TestTapeBeladyEqualsTheInMemoryOne(t *testing.T) {
	check := func(name string, seqs [][]uint64, at []int64, capacity, tail int, valuable func(i, k int) bool) {
		t.Helper()
		want := beladyHits(seqs, at, capacity, valuable, nil)
		tp, err := newTape(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer tp.close()
		tp.tailCap = tail
		for i, s := range seqs {
			if err := tp.add(i, s); err != nil {
				t.Fatal(err)
			}
		}
		for pass := range 2 { // a tape rewinds more than once
			rd, err := tp.rewind()
			if err != nil {
				t.Fatal(err)
			}
			got, err := beladyTape(rd, len(seqs), func(i int) int { return len(seqs[i]) }, func(i int) int64 { return at[i] }, capacity, valuable)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s, pass %d (capacity %d): tape %v, in memory %v", name, pass, capacity, got, want)
			}
		}
	}
	rng := rand.New(rand.NewPCG(27, 28))
	for n := range 200 {
		seqs, at := smallWorkload(rng, 5+rng.IntN(20))
		worthless := map[[2]int]bool{}
		for i, s := range seqs {
			for k := range s {
				worthless[[2]int{i, k}] = rng.IntN(3) == 0
			}
		}
		check(fmt.Sprint("case ", n), seqs, at, rng.IntN(6), 1+rng.IntN(4), func(i, k int) bool { return !worthless[[2]int{i, k}] })
	}
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{Limit: 1500})
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([][]uint64, len(w.Requests))
	at := make([]int64, len(w.Requests))
	for i := range w.Requests {
		seqs[i] = kvevents.PromptHashes(w.PromptTokens(i), w.BlockSize)
		at[i] = int64(w.Requests[i].At)
	}
	for _, capacity := range []int{64, 1024, 1 << 30} {
		check(fmt.Sprint("trace, capacity ", capacity), seqs, at, capacity, 16, func(i, k int) bool { return k >= 2 && (w.Requests[i].HasWakeup || k%2 == 0) })
	}
}
