package simulate

import (
	"strings"
	"time"

	"github.com/hintstream/hintstream/decide/ahead"
	"github.com/hintstream/hintstream/whatif/cluster"
)

// Header-free prefetches in a run: hintstream's prefetches that no
// wake-up asked for (request_id "ahead-…", package ahead). The harness
// measures their waste itself, apart from hintstream's own accounting: a
// prefetched block is used when a turn finds it on the device of the
// worker it was loaded into before the prefetch expires; the rest of the
// blocks it loaded were moved for nothing.

// aheadPrefix starts the request_id of a header-free prefetch.
const aheadPrefix = "ahead-"

// AheadResult is what header-free prefetches did in a run.
type AheadResult struct {
	// Prefetches applied by workers, Blocks they loaded from L3, of
	// which UsedBlocks a turn found on that device before expiry and
	// WastedBlocks not.
	Prefetches                       int
	Blocks, UsedBlocks, WastedBlocks int64
	// Hintstream's own accounting (its counters): bytes used and wasted.
	UsedBytes, WastedBytes uint64
	// Sessions the trial judged (conversations with a second turn, the
	// first turn a header-free prefetch can be planned for), and Passed
	// those it sent at least one header-free prefetch for: why a row with
	// header-free prefetch can equal the row without ("0 of N passed").
	Sessions, Passed int
}

// WasteRatio is WastedBlocks / UsedBlocks.
func (a AheadResult) WasteRatio() float64 {
	return ratio(float64(a.WastedBlocks), float64(a.UsedBlocks))
}

// aheadLoad is one header-free prefetch's blocks on a worker.
type aheadLoad struct {
	worker  int
	hashes  []uint64
	expires time.Duration // simulated time
}

// aheadConfig is hintstream's header-free prefetch in a run: the run's
// load model (the L3 link and KV size the simulator's transfer times
// use), contexts followed too.
func aheadConfig(cfg Config) *ahead.Config {
	return &ahead.Config{L3Bandwidth: cfg.L3Bandwidth, KVBytesPerToken: cfg.KVBytesPerToken, Contexts: true}
}

// isAhead says a prefetch's request_id is a header-free one.
func isAhead(requestID string) bool { return strings.HasPrefix(requestID, aheadPrefix) }

// aheadPrefetch applies a header-free prefetch of pr on worker wk,
// expiring at the simulated time expires.
func (p *player) aheadPrefetch(wk int, pr *cluster.Prompt, expires time.Duration) error {
	start := p.cl.Workers[wk].Cache.Prefix(pr.Seq)
	n, err := p.cl.Prefetch(wk, pr)
	if err != nil {
		return err
	}
	p.res.Ahead.Prefetches++
	p.res.Ahead.Blocks += int64(n)
	if n > 0 {
		p.ahead = append(p.ahead, aheadLoad{worker: wk, hashes: append([]uint64(nil), pr.Seq[start:start+n]...), expires: expires})
	}
	return nil
}

// aheadServed settles the header-free prefetches a turn on wk used: the
// blocks of its prompt it found on the device (dev leading blocks). Those
// expired by now are wasted.
func (p *player) aheadServed(wk int, pr *cluster.Prompt, dev int) {
	if len(p.ahead) == 0 {
		return
	}
	now := p.cl.Now()
	var found map[uint64]bool
	kept := p.ahead[:0]
	for _, l := range p.ahead {
		if l.expires <= now {
			p.res.Ahead.WastedBlocks += int64(len(l.hashes))
			continue
		}
		if l.worker != wk {
			kept = append(kept, l)
			continue
		}
		if found == nil {
			found = make(map[uint64]bool, dev)
			for _, h := range pr.Seq[:min(dev, len(pr.Seq))] {
				found[h] = true
			}
		}
		used := 0
		for _, h := range l.hashes {
			if found[h] {
				used++
			}
		}
		if used == 0 {
			kept = append(kept, l)
			continue
		}
		p.res.Ahead.UsedBlocks += int64(used)
		p.res.Ahead.WastedBlocks += int64(len(l.hashes) - used)
	}
	p.ahead = kept
}

// aheadFinish counts what no turn used as wasted.
func (p *player) aheadFinish() {
	for _, l := range p.ahead {
		p.res.Ahead.WastedBlocks += int64(len(l.hashes))
	}
	p.ahead = nil
}
