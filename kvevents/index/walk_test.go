package index

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// TestOverlapJumpExactWhenPrefixClosed: when every worker holds a prefix
// of the prompt (stored in events of random lengths, then trimmed from
// the tail as engines evict), probing every DefaultJump-th block gives
// the same counts as looking up every block, for the whole prompt and
// for prefixes of every length class; over 130 workers (three pages).
func TestOverlapJumpExactWhenPrefixClosed(t *testing.T) {
	const workers, prompt = 130, 700
	r := rand.New(rand.NewPCG(5, 5))
	local, seq := randomPrompt(11, prompt)
	other, _ := randomPrompt(12, prompt)
	jump, every := New(), New(WithJump(1))
	apply := func(ev kvevents.Event) {
		mustApply(t, jump, ev)
		mustApply(t, every, ev)
	}
	for w := range workers {
		k := kvevents.WorkerKey{WorkerID: uint64(w)}
		ext := uint64(w) << 32
		held := []int{0, 1, 31, 32, 33, prompt}[w%6]
		if w%6 == 0 {
			held = r.IntN(prompt + 1)
		}
		id := uint64(1)
		for from := 0; from < held; id++ {
			to := min(held, from+1+r.IntN(100))
			apply(storeRange(k, id, local, from, to, ext))
			from = to
		}
		if w%5 == 0 && held > 0 && held < prompt {
			// Diverge: another prompt's blocks after the held prefix.
			ev := storeRange(k, id, other, held, min(prompt, held+50), ext)
			apply(ev)
			id++
		}
		if w%7 == 0 && held > 1 {
			// Evict a tail, last block first.
			cut := r.IntN(held)
			ev := kvevents.Event{Worker: k, EventID: id, Kind: schemas.KindRemoved}
			for i := held - 1; i >= cut; i-- {
				ev.Removed = append(ev.Removed, ext+uint64(i))
			}
			apply(ev)
		}
	}
	deep := 0
	for _, n := range []int{1, 2, 3, 31, 32, 33, 63, 64, 65, 100, 500, prompt} {
		got, want := jump.Overlap(seq[:n]), every.Overlap(seq[:n])
		if !maps.Equal(got, want) {
			t.Fatalf("prompt of %d blocks: Overlap = %v, want %v", n, got, want)
		}
		for _, d := range want {
			if d > 32 {
				deep++
			}
		}
	}
	if deep == 0 {
		t.Fatal("no worker overlaps past the first probe")
	}
}

// TestOverlapJumpFindsHoleAtProbeOrInScan: a hole is found wherever a
// lookup lands on it: on a probe, or in a scan that another worker's
// loss set off; only a hole strictly between two probes that find the
// worker, with no scan there, is credited through.
func TestOverlapJumpFindsHoleAtProbeOrInScan(t *testing.T) {
	const n = 96 // probes at 0, 31, 63 and 95
	local, seq := randomPrompt(13, n)
	a, b := kvevents.WorkerKey{WorkerID: 1}, kvevents.WorkerKey{WorkerID: 2}
	remove := func(ix *Memory, w kvevents.WorkerKey, ext uint64) {
		mustApply(t, ix, kvevents.Event{Worker: w, EventID: 2, Kind: schemas.KindRemoved, Removed: []uint64{ext}})
	}
	for _, tc := range []struct {
		name string
		bEnd int // b holds seq[:bEnd]
		hole int // a's missing block
		want map[kvevents.WorkerKey]int
	}{
		{"hole at a probe", 0, 63, map[kvevents.WorkerKey]int{a: 63}},
		{"hole between probes", 0, 40, map[kvevents.WorkerKey]int{a: n}},
		{"hole in a scan", 50, 40, map[kvevents.WorkerKey]int{a: 40, b: 50}},
		{"hole after the loss in a scan", 35, 40, map[kvevents.WorkerKey]int{a: 40, b: 35}},
		{"hole before the loss in a scan", 35, 33, map[kvevents.WorkerKey]int{a: 33, b: 35}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := New()
			mustApply(t, ix, storeRange(a, 1, local, 0, n, 0))
			remove(ix, a, uint64(tc.hole))
			if tc.bEnd > 0 {
				mustApply(t, ix, storeRange(b, 1, local, 0, tc.bEnd, 1000))
			}
			wantOverlap(t, ix, seq, tc.want)
		})
	}
}
