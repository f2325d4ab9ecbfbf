package simulate

import (
	"fmt"
	"strings"
)

// The causes a run's missed saving is charged to, in the order they are
// tried for each request.
type cause uint8

const (
	causeNone        cause = iota // nothing went wrong with its prefetch
	causeNoWakeup                 // no wake-up, or it made no prefetch
	causeWrongWorker              // the prefetch went to another worker
	causeUnready                  // the turn came before the load finished
	causeEvicted                  // prefetched pages evicted from the device before the turn
	causePinLapsed                // the previous turn's pin ran out before the turn
)

// Lost is the saving a run misses against the clairvoyant bound, in
// prefill cost (token-equivalents), by cause. Each request's shortfall,
// its cost minus its cost under the bound, is charged to the first cause
// that applies to it:
//
//   - NoWakeup: no wake-up announced the turn (a conversation's first
//     turn: the bound keeps pages other conversations share), or it made
//     no prefetch;
//   - WrongWorker: the prefetch went to a worker the turn was not routed to;
//   - LoadNotFinished: the turn came while its prefetch was still loading
//     (transfer time);
//   - EvictedBeforeUse: pages the prefetch loaded were evicted from the
//     device before the turn, or pages the bound keeps were gone from L3
//     by the wake-up, so the prefetch could not load them;
//   - PinLapsed: the previous turn's pin ran out before the turn;
//   - Rest: everything else, mostly L3 loads after the prefetched prefix
//     (Alpha a token; the bound pays nothing for a kept page), and
//     requests a run serves better than the bound's per-request share
//     (negative, so that the rows add up to the whole gap).
//
// Total = saving(bound) − saving(run).
type Lost struct {
	NoWakeup, WrongWorker, LoadNotFinished, EvictedBeforeUse, PinLapsed, Rest float64
	Total                                                                     float64
	// Announced counts the turns a wake-up announced; AnnouncedBound and
	// AnnouncedRun are the bound's and the run's savings on them alone
	// (what wake-up hints can reach).
	Announced                    int
	AnnouncedBound, AnnouncedRun float64
}

// lostSavings charges m's shortfall against the bound per request.
func lostSavings(m, bound, none ModeResult, boundHits []int, announced func(i int) bool) Lost {
	var l Lost
	if len(m.PerRequestCost) != len(bound.PerRequestCost) || len(m.causes) != len(m.PerRequestCost) ||
		len(none.PerRequestCost) != len(m.PerRequestCost) {
		return l
	}
	for i, c := range m.PerRequestCost {
		l.add(c, none.PerRequestCost[i], bound.PerRequestCost[i], m.causes[i], m.extent[i], boundHits[i], announced(i))
	}
	return l
}

// add charges one request's shortfall: it cost c in the run, none
// without hints and bound under the clairvoyant bound, which found
// boundHits leading blocks; why is its cause and extent its prefetch's
// extent. Requests must be added in index order for the sums to be the
// same to the last bit however they are collected.
func (l *Lost) add(c, none, bound float64, why cause, extent, boundHits int, announced bool) {
	if announced {
		l.Announced++
		l.AnnouncedBound += none - bound
		l.AnnouncedRun += none - c
	}
	gap := c - bound
	l.Total += gap
	if gap <= 0 {
		l.Rest += gap
		return
	}
	switch why {
	case causeNoWakeup:
		l.NoWakeup += gap
	case causeWrongWorker:
		l.WrongWorker += gap
	case causeUnready:
		l.LoadNotFinished += gap
	case causeEvicted:
		l.EvictedBeforeUse += gap
	case causePinLapsed:
		l.PinLapsed += gap
	default:
		if extent < boundHits {
			l.EvictedBeforeUse += gap
		} else {
			l.Rest += gap
		}
	}
}

// classify names what went wrong with request i's prefetch, served on wk.
func (p *player) classify(i, wk int, si servedInfo) cause {
	to, ok := p.prefetchedTo[i]
	switch {
	case !p.w.Req(i).HasWakeup || !ok:
		return causeNoWakeup
	case to != wk:
		return causeWrongWorker
	case si.unready > 0:
		return causeUnready
	case si.held < p.extent[i]:
		return causeEvicted
	case si.pinLapsed:
		return causePinLapsed
	}
	return causeNone
}

// Markdown renders the breakdown as a table.
func (l Lost) Markdown(run string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| saving %s misses against the bound, by cause | prefill cost | share |\n| --- | ---: | ---: |\n", run)
	for _, row := range []struct {
		name string
		v    float64
	}{{"no wake-up before the turn", l.NoWakeup}, {"prefetch to the wrong worker", l.WrongWorker},
		{"load not finished in time", l.LoadNotFinished}, {"page evicted before use", l.EvictedBeforeUse},
		{"pin lapsed", l.PinLapsed}, {"rest: L3 loads past the prefetched prefix, and per-request gains", l.Rest},
		{"**total** (bound's saving − " + run + "'s)", l.Total}} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.name, group(int64(row.v+0.5*sign(row.v))), percent(ratio(row.v, l.Total)))
	}
	fmt.Fprintf(&b, "\nOn the %d turns a wake-up announced, the bound saves %s and %s %s (%s of it).\n", l.Announced,
		group(int64(l.AnnouncedBound+0.5)), run, group(int64(l.AnnouncedRun+0.5)), percent(ratio(l.AnnouncedRun, l.AnnouncedBound)))
	return b.String()
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}
