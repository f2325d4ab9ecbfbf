package routing

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// selectBench builds the load test's shape (loadtest/speed): 8 workers of
// block size 16, 64 sessions of 2,048-token prompts, each worker holding
// the first half of its sessions' prompts on device, every worker with a
// load report. It returns the selector and the wake-up requests.
func selectBench(b *testing.B) (*Selector, []*schemas.RequestEvent) {
	b.Helper()
	const workers, sessions, tokens, bs = 8, 64, 2048, 16
	ix := index.New()
	var reg staticWorkers
	loads := NewLoadTable()
	for w := range uint64(workers) {
		reg = append(reg, worker(w+1, "m", bs, 1))
		if err := loads.Update(schemas.ActiveLoad{WorkerID: w + 1, ActiveDecodeBlocks: u64(w),
			ActivePrefillTokens: u64(w * 16)}); err != nil {
			b.Fatal(err)
		}
	}
	reqs := make([]*schemas.RequestEvent, sessions)
	for s := range reqs {
		p := make([]uint32, tokens)
		for i := range p {
			p[i] = uint32(s*tokens + i)
		}
		local := kvevents.LocalBlockHashes(p, bs)[:tokens/bs/2]
		blocks := make([]kvevents.Block, len(local))
		for i, h := range local {
			blocks[i] = kvevents.Block{ExternalHash: uint64(s)<<32 | uint64(i+1), LocalHash: h}
		}
		if err := ix.Apply(kvevents.Event{Worker: key(uint64(s%workers)+1, 0), EventID: uint64(s/workers + 1),
			Kind: schemas.KindStored, Blocks: blocks}); err != nil {
			b.Fatal(err)
		}
		reqs[s] = &schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: p}
	}
	return mustSelector(NewSelector(reg, ix, loads)), reqs
}

// BenchmarkSelect is one worker choice for a wake-up on the load test's
// index (selectBench): hashing the prompt, the overlap lookup, the cost
// of 8 candidates.
func BenchmarkSelect(b *testing.B) {
	s, reqs := selectBench(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		r := reqs[i%len(reqs)]
		c, err := s.Select(r)
		if err != nil || c.Overlap != 64 || c.Worker.WorkerID != uint64(i%len(reqs)%8)+1 {
			b.Fatalf("Select = %+v, %v", c, err)
		}
		i++
	}
}
