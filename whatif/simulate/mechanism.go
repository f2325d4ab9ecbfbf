package simulate

import (
	"fmt"
	"strings"
)

// Mechanism is the saving a run misses against the clairvoyant bound,
// block by block, each lost token charged to the first mechanism that
// would have recovered it:
//
//   - Retention: the bound kept the page and the run recomputed it (it
//     was not in L3 in a usable run): keeping it would have recovered
//     1 − Alpha a token; the run's gains over the bound (pages it kept
//     and the bound did not, which are retention choices too) are netted
//     here;
//   - Timing: the page was on the turn's worker but still loading;
//   - WrongWorker: the turn's prefetch went to another worker;
//   - Placement: on an announced turn, the page was (or, after
//     retention, would have been) in L3 but not on the turn's worker:
//     the Alpha a token a load costs;
//   - NoSignal: the same on a turn nothing announced: no hint could
//     have placed it.
//
// The rows add up to Total = saving(bound) − saving(run), exactly; the
// partial last block of a prompt costs the same in both and is not
// charged.
type Mechanism struct {
	Retention, Placement, Timing, WrongWorker, NoSignal float64
	// Warmup is what the run's speculative prefills cost (a peer's warm-up
	// prefill, charged to no block of a turn).
	Warmup float64
	// Gains is the run's saving on blocks the bound did not keep (a
	// negative amount, netted into Retention).
	Gains float64
	Total float64
}

// mechanism charges run's shortfall against the clairvoyant bound
// (boundHits per request) by mechanism.
func mechanism(cfg Config, pr *prompts, run ModeResult, boundHits []int) Mechanism {
	var m Mechanism
	w := cfg.Workload
	n := w.Len()
	if len(run.served) != n || len(boundHits) != n {
		return m
	}
	seqs := make([][]uint64, n)
	at := make([]int64, n)
	for i := range w.Len() {
		p, err := pr.get(i)
		if err != nil {
			return Mechanism{}
		}
		seqs[i], at[i] = p.Seq, int64(w.Req(i).At)
	}
	kept := make([][]bool, n)
	for i := range kept {
		kept[i] = make([]bool, len(seqs[i]))
	}
	beladyHits(seqs, at, cfg.Workers*cfg.DeviceBlocks+cfg.L3Blocks, func(int, int) bool { return true },
		func(i, k int) { kept[i][k] = true })
	for i := range w.Len() {
		m.add(kept[i], run.served[i], run.causes[i] == causeWrongWorker, w.Req(i).HasWakeup, cfg.Alpha, float64(w.BlockSize), 0)
	}
	m.close()
	return m
}

// add charges one request's blocks: kept[k] says the bound kept its
// block k; si is what the run's turn found, wrong that its prefetch went
// to another worker, announced that a wake-up announced it, and warmup
// what a speculative prefill at its response cost. Simulate adds its
// requests one by one as it folds them (fold.go), Run all at once.
func (m *Mechanism) add(kept []bool, si servedInfo, wrong, announced bool, a, bs, warmup float64) {
	m.Warmup += warmup
	m.Total += warmup
	for k := range kept {
		bound := 1.0
		if kept[k] {
			bound = 0
		}
		cost := 1.0
		switch {
		case k < si.dev:
			cost = 0
		case k < si.dev+si.l3:
			cost = a
		}
		d := cost - bound
		switch {
		case d < 0:
			m.Gains += d * bs
			continue
		case d == 0:
			continue
		}
		m.Total += d * bs
		place := d
		switch {
		case k < si.held:
			m.Timing += d * bs
			continue
		case cost == 1:
			m.Retention += (1 - a) * bs
			place = a
		}
		switch {
		case wrong:
			m.WrongWorker += place * bs
		case announced:
			m.Placement += place * bs
		default:
			m.NoSignal += place * bs
		}
	}
}

// close nets the gains into Retention and Total, once every request is
// added.
func (m *Mechanism) close() {
	m.Total += m.Gains
	m.Retention += m.Gains
}

// Markdown renders the breakdown as a table.
func (m Mechanism) Markdown(run string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "| saving %s misses against the clairvoyant bound, by mechanism | prefill cost | share |\n| --- | ---: | ---: |\n", run)
	for _, row := range []struct {
		name string
		v    float64
	}{{"retention: evicted from L3 before reuse (net of the run's own gains, " + group(int64(m.Gains)) + ")", m.Retention},
		{"placement: in L3, not on the announced turn's worker", m.Placement},
		{"timing: load not finished when the turn came", m.Timing},
		{"wrong worker: the prefetch went elsewhere", m.WrongWorker},
		{"no signal: in L3, not on the worker, and nothing announced the turn", m.NoSignal},
		{"warm-up: the speculative prefills' own prefill", m.Warmup},
		{"**total** (bound's saving − " + run + "'s)", m.Total}} {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", row.name, group(int64(row.v+0.5*sign(row.v))), percent(ratio(row.v, m.Total)))
	}
	return b.String()
}
