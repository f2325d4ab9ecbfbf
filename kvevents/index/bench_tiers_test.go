package index

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// BenchmarkOverlapTiers is the wake-up path's lookup as routing calls it:
// Overlap, then LowerOverlap on its answer, for BenchmarkOverlap's hot
// 2,048-block prompt among 64 workers and 1M device entries.
// device-only: no lower-tier block anywhere (LowerOverlap is one atomic
// load), to compare with BenchmarkOverlap/jump=32/hot; host: 16 workers
// also hold 256-block stretches on host_pinned (8 extending their device
// prefix, 8 from the root) and 8 of those continue 128 blocks on disk.
func BenchmarkOverlapTiers(b *testing.B) {
	for _, withHost := range []bool{false, true} {
		name := "device-only"
		if withHost {
			name = "host"
		}
		b.Run(name, func(b *testing.B) {
			ix, seq, want, local := overlapPromptLocal(b)
			if withHost {
				offloadForBench(b, ix, local, want)
			}
			b.ReportAllocs()
			for b.Loop() {
				dev := ix.Overlap(seq)
				lo := ix.LowerOverlap(seq, dev)
				if len(dev) != len(want) || withHost != (len(lo) > 0) {
					b.Fatal("wrong overlap")
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seq)), "ns/block")
		})
	}
}

// offloadForBench stores host and disk stretches of the prompt (local)
// for some workers of overlapPromptLocal's index.
func offloadForBench(tb testing.TB, ix *Memory, local []uint64, device map[kvevents.WorkerKey]int) {
	apply := func(k kvevents.WorkerKey, tier schemas.StorageTier, ext uint64, parent *uint64, from, to int) {
		ev := kvevents.Event{Worker: k, Kind: schemas.KindStored, Tier: tier, ParentHash: parent}
		for i := from; i < to; i++ {
			ev.Blocks = append(ev.Blocks, kvevents.Block{ExternalHash: ext + uint64(i), LocalHash: local[i]})
		}
		if err := ix.Apply(ev); err != nil {
			tb.Fatal(err)
		}
	}
	for w := 1; w < 8; w++ { // device depths below the whole prompt
		k := kvevents.WorkerKey{WorkerID: uint64(100 + w)}
		d := device[k]
		ext := uint64(w) << 32 // the device blocks' external hashes, as stored
		p := ext + uint64(d-1)
		to := min(d+256, len(local))
		apply(k, schemas.TierHostPinned, ext, &p, d, to)
		if to < len(local) {
			q := ext + uint64(to-1)
			apply(k, schemas.TierDisk, ext, &q, to, min(to+128, len(local)))
		}
	}
	for w := 24; w < 33; w++ { // host from the root
		k := kvevents.WorkerKey{WorkerID: uint64(100 + w)}
		apply(k, schemas.TierHostPinned, uint64(w)<<32|1<<31, nil, 0, 256)
	}
}
