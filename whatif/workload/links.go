package workload

import (
	"slices"
	"time"
)

// MinLinkBlocks is the fewest leading blocks a request must share with
// an earlier one (the earlier one's whole full-block prompt) to be its
// next turn. With 512-token blocks, one block is what a system prompt
// shares with every request, and linking through it makes "next turns"
// of unrelated requests.
const MinLinkBlocks = 2

// LinkStats describes a workload's next-turn links.
type LinkStats struct {
	// Links counts requests with a previous turn; Forks those among them
	// that continue a turn another request continued first.
	Links, Forks int
	// Gap percentiles: from the previous turn's response to the turn.
	GapP10, GapP50, GapP90 time.Duration
	// SharedP50 is the median share of the turn's full blocks the link
	// shares with its previous turn.
	SharedP50 float64
}

// Links summarises the workload's next-turn links.
func (w *Workload) Links() LinkStats {
	var s LinkStats
	var gaps []time.Duration
	var shared []float64
	for i := range w.Len() {
		r := w.Req(i)
		if r.Prev < 0 {
			continue
		}
		s.Links++
		if r.Fork {
			s.Forks++
		}
		p := w.Req(r.Prev)
		gaps = append(gaps, r.At-p.ResponseAt)
		if full := r.InputLength / w.BlockSize; full > 0 {
			shared = append(shared, float64(p.InputLength/w.BlockSize)/float64(full))
		}
	}
	slices.Sort(gaps)
	slices.Sort(shared)
	at := func(q float64) time.Duration {
		if len(gaps) == 0 {
			return 0
		}
		return gaps[min(int(q*float64(len(gaps))), len(gaps)-1)]
	}
	s.GapP10, s.GapP50, s.GapP90 = at(0.1), at(0.5), at(0.9)
	if len(shared) > 0 {
		s.SharedP50 = shared[len(shared)/2]
	}
	return s
}
