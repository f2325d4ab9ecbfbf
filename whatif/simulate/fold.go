package simulate

import (
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// SavingPoint is a run's saving against the no-hints run over the
// requests that came by At (from the first request).
type SavingPoint struct {
	At     time.Duration
	Saving float64
}

// overTime folds per-request savings, in request order, into n even
// steps of the workload's time: the same sums, to the bit, as adding
// them up from per-request arrays, without holding the arrays.
type overTime struct {
	first, span time.Duration
	k           int
	sum         float64
	out         []SavingPoint
}

func newOverTime(w *workload.Workload, n int) *overTime {
	if n <= 0 || w.Len() == 0 {
		return nil
	}
	first, last := w.Req(0).At, w.Req(w.Len()-1).At
	return &overTime{first: first, span: max(last-first, time.Millisecond), out: make([]SavingPoint, n)}
}

func (o *overTime) until(k int) time.Duration {
	return o.first + time.Duration(float64(o.span)*float64(k+1)/float64(len(o.out)))
}

// add adds the saving of the next request, which came at at. A request
// past the last step's end (rounding) is not counted.
func (o *overTime) add(at time.Duration, saving float64) {
	if o == nil {
		return
	}
	for o.k < len(o.out) && at > o.until(o.k) {
		o.out[o.k] = SavingPoint{At: o.until(o.k) - o.first, Saving: o.sum}
		o.k++
	}
	if o.k < len(o.out) {
		o.sum += saving
	}
}

// points closes the remaining steps and returns the series.
func (o *overTime) points() []SavingPoint {
	if o == nil {
		return nil
	}
	for ; o.k < len(o.out); o.k++ {
		o.out[o.k] = SavingPoint{At: o.until(o.k) - o.first, Saving: o.sum}
	}
	return o.out
}

// folder turns each request's results, once every run has played all of
// its events, into running sums (lost savings, saving over time), in
// request order, and makes the runs forget the request: what is held is
// the requests between the oldest unfinished one and the newest played,
// not the trace.
type folder struct {
	w *workload.Workload
	// boundHit gives the leading blocks each request finds under the
	// clairvoyant bound, computed before the runs; asked once a request,
	// in request order (a spill read back). err is its first failure.
	boundHit func(i int, kept []bool) (int32, []bool, error)
	kept     []bool // the request's blocks the bound kept (scratch)
	// alpha prices an L3 load for the mechanism breakdown.
	alpha     float64
	mech      []Mechanism // per run; the first run's (no hints) is not reported
	err       error
	runs      []*run
	lost      []Lost // per run; the first run's (no hints) is not reported
	over      []*overTime
	boundOver *overTime
	played    map[int]uint8 // events played of requests not yet folded
	next      int           // every request before it is folded
}

func newFolder(w *workload.Workload, runs []*run, boundHit func(i int, kept []bool) (int32, []bool, error), timePoints int, alpha float64) *folder {
	f := &folder{w: w, runs: runs, lost: make([]Lost, len(runs)), over: make([]*overTime, len(runs)), mech: make([]Mechanism, len(runs)), alpha: alpha,
		boundOver: newOverTime(w, timePoints), played: map[int]uint8{}, boundHit: boundHit}
	for k := range runs {
		f.over[k] = newOverTime(w, timePoints)
	}
	return f
}

// events is how many events request i has: its request and response,
// and its wake-up if it has one.
func (f *folder) events(i int) uint8 {
	if f.w.Req(i).HasWakeup {
		return 3
	}
	return 2
}

// played notes events every run has played, and folds the requests they
// finish.
func (f *folder) playedAll(evs []workload.Event) {
	for _, ev := range evs {
		f.played[ev.Request]++
	}
	for f.next < f.w.Len() && f.played[f.next] >= f.events(f.next) {
		f.fold(f.next)
	}
}

// finish folds every request left (all of them have played by now).
func (f *folder) finish() {
	for f.next < f.w.Len() {
		f.fold(f.next)
	}
}

func (f *folder) fold(i int) {
	r := f.w.Req(i)
	none := f.runs[0].p.out[i].cost
	bh, kept, err := f.boundHit(i, f.kept)
	f.kept = kept
	if err != nil && f.err == nil {
		f.err = err
	}
	hit := int64(min(int(bh)*f.w.BlockSize, r.InputLength))
	bound := float64(int64(r.InputLength) - hit)
	for k, rn := range f.runs {
		o := rn.p.out[i]
		if k > 0 {
			f.lost[k].add(o.cost, none, bound, o.why, rn.p.extent[i], int(bh), r.HasWakeup)
			f.mech[k].add(kept, o.served, o.why == causeWrongWorker, r.HasWakeup, f.alpha, float64(f.w.BlockSize), o.warmup)
		}
		f.over[k].add(r.At, none-o.cost)
		rn.forget(i)
	}
	f.boundOver.add(r.At, none-bound)
	delete(f.played, i)
	f.next = i + 1
}
