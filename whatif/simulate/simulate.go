package simulate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// Simulation is what Simulate measured: the no-hints run, the next-turn
// oracle, the clairvoyant bound and one run per policy, all on identical
// clusters, with savings against the no-hints run.
type Simulation struct {
	Result
	// Policies are the in-process engine's runs, in the order asked
	// (Mode is the policy's name), each with its lost savings.
	Policies []ModeResult
	// Reachable is the hint-reachable bound (reachable.go) on the same
	// workload and capacities.
	Reachable ModeResult
	// HeldPrompts is the most hashed prompts held at once.
	HeldPrompts int
	// HeldPinKeys is the most requests' pin keys held at once (at the
	// end of a stretch, before its responses' are dropped).
	HeldPinKeys int
	// HeldResults is the most requests one run held results of at once
	// (served, not yet folded into the sums), at the end of a stretch.
	HeldResults int
}

// simulateStretch is how many events Simulate plays of every run before
// it drops the prompts they are done with: enough to keep the CPUs busy
// between the pauses, small against a trace.
const simulateStretch = 1024

// simulateStep is how many events of a stretch every run plays before
// any plays on: the prompts' tokens made in a step are held until it
// ends (prompts.step), so a step's prompts are made about once for all
// runs, and what is held is a step's prompts, tens of megabytes at
// agentic lengths, not a stretch's.
const simulateStep = 64

// Simulate plays cfg.Workload without hints, with the next-turn oracle
// and once per policy with hintstream's decision engine in process on
// the simulated clock (no service, no bus, no sockets), and computes the
// clairvoyant bound. Like Run, it fails with ErrBoundBeaten if a run
// costs less than the bound. The Result's Hintstream run is left empty.
func Simulate(ctx context.Context, cfg Config, policies []Policy) (Simulation, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Simulation{}, err
	}
	if len(policies) == 0 {
		return Simulation{}, fmt.Errorf("%w: no policy", ErrConfig)
	}
	seen := map[string]bool{}
	for _, p := range policies {
		switch Mode(p.Name) {
		case "", ModeNoHints, ModeOracle, ModeHintstream, ModeBound:
			return Simulation{}, fmt.Errorf("%w: policy name %q is empty or a run's", ErrConfig, p.Name)
		}
		if seen[p.Name] {
			return Simulation{}, fmt.Errorf("%w: policy %q twice", ErrConfig, p.Name)
		}
		seen[p.Name] = true
	}
	w := cfg.Workload
	var s Simulation
	s.Result = Result{Workload: w.Stats(), Workers: cfg.Workers, DeviceBlocks: cfg.DeviceBlocks,
		L3Blocks: cfg.L3Blocks, BlockSize: w.BlockSize, Alpha: cfg.Alpha, AnnounceToolTime: cfg.AnnounceToolTime, Affinity: cfg.Affinity,
		TransferTime: cfg.TransferTime, KVBytesPerToken: cfg.KVBytesPerToken, L3Bandwidth: cfg.L3Bandwidth}
	pr, err := newPrompts(cfg)
	if err != nil {
		return s, err
	}
	pr.step = map[int][]uint32{}
	// The bound first, over its tape: the runs' per-request results are
	// then folded as they come, against the bound's per-request hits.
	var boundHits *int32Spill
	if s.Bound, boundHits, err = boundSpill(cfg); err != nil {
		return s, err
	}
	defer boundHits.close()
	// The hint-reachable bound, as Run computes it: one more play of the
	// router and devices, streamed.
	if s.Reachable, err = reachableStream(cfg, pr); err != nil {
		return s, err
	}
	// The runs share only the workload and the hashed prompts. They go
	// side by side, as many at once as there are CPUs, a stretch of
	// events at a time, so that a prompt can be dropped once every run
	// has played its request's response: memory holds the requests in
	// flight, not the trace.
	type job struct {
		mode Mode
		pol  *Policy
		out  *ModeResult
		r    *run
		last time.Duration // playing the last stretch took
	}
	s.Policies = make([]ModeResult, len(policies))
	jobs := []*job{{mode: ModeNoHints, out: &s.NoHints}, {mode: ModeOracle, out: &s.Oracle}}
	for i := range policies {
		jobs = append(jobs, &job{mode: Mode(policies[i].Name), pol: &policies[i], out: &s.Policies[i]})
	}
	runs := make([]*run, len(jobs))
	for k, j := range jobs {
		r, err := startRun(ctx, cfg, pr, j.mode, j.pol)
		if err != nil {
			return s, fmt.Errorf("simulate: %s run: %w", j.mode, err)
		}
		defer r.h.close()
		r.p.forgetSessions = true
		j.r, runs[k] = r, r
	}
	f := newFolder(w, runs, func(_ int, kept []bool) (int32, []bool, error) { return boundKept(boundHits, kept) }, cfg.TimePoints, cfg.Alpha)
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
	stretch := cmp.Or(cfg.stretch, simulateStretch)
	order := make([]int, len(jobs))
	for k := range order {
		order[k] = k
	}
	for from := 0; from < w.NumEvents(); from += stretch {
		to := min(from+stretch, w.NumEvents())
		evs := w.EventRange(from, to)
		if err := w.Err(); err != nil {
			return s, fmt.Errorf("simulate: reading the workload back: %w", err)
		}
		if err := loadStretchIDs(cfg, evs); err != nil {
			return s, err
		}
		// Every run plays a step of the stretch before any plays the
		// next, so that the runs ask for a prompt's tokens at about the
		// same time and one making serves them all (prompts.step); the
		// prompts' hashes, pin keys and results stay until the stretch
		// ends.
		for lo := 0; lo < len(evs); lo += simulateStep {
			step := evs[lo:min(lo+simulateStep, len(evs))]
			// The longest runs of the last step start first, so that the
			// step does not end on one long run with the other CPUs idle
			// (each run plays alone: the order changes no result).
			slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(jobs[b].last, jobs[a].last) })
			var wg sync.WaitGroup
			for _, k := range order {
				j := jobs[k]
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					t := time.Now()
					if err := j.r.p.play(ctx, j.r.h, from+lo, step); err != nil {
						errs[k] = fmt.Errorf("simulate: %s run: %w", j.mode, err)
					}
					j.last = time.Since(t)
					j.r.elapsed += j.last
				}()
			}
			wg.Wait()
			pr.stepDone()
			if err := ctx.Err(); err != nil {
				return s, err // one cause, not one per run
			}
			if err := errors.Join(errs...); err != nil {
				return s, err
			}
		}
		s.HeldPrompts = max(s.HeldPrompts, pr.size())
		s.HeldPinKeys = max(s.HeldPinKeys, pr.pins.size())
		if err := w.Err(); err != nil {
			return s, fmt.Errorf("simulate: reading the workload back: %w", err)
		}
		for _, ev := range evs {
			if ev.Kind == workload.KindResponse {
				pr.release(ev.Request)
				dropIDs(cfg, ev.Request)
			}
		}
		for _, r := range runs {
			s.HeldResults = max(s.HeldResults, len(r.p.out))
		}
		f.playedAll(evs)
		if f.err != nil {
			return s, f.err
		}
	}
	f.finish()
	if f.err != nil {
		return s, f.err
	}
	for k, j := range jobs {
		*j.out = j.r.finish()
		j.out.SavingOverTime = f.over[k].points()
		if k > 0 {
			j.out.Lost = f.lost[k]
			m := f.mech[k]
			m.close()
			j.out.Mechanism = &m
		}
	}
	s.Bound.SavingOverTime = f.boundOver.points()
	s.NoHints.Saving = 0
	s.Oracle.Saving = s.NoHints.Cost - s.Oracle.Cost
	s.Bound.Saving = s.NoHints.Cost - s.Bound.Cost
	s.Reachable.Saving = s.NoHints.Cost - s.Reachable.Cost
	for i := range s.Policies {
		m := &s.Policies[i]
		m.Saving = s.NoHints.Cost - m.Cost
	}
	for _, m := range append([]ModeResult{s.NoHints, s.Oracle}, s.Policies...) {
		if m.Cost < s.Bound.Cost-1e-6*max(1, s.Bound.Cost) {
			return s, fmt.Errorf("%w: %s costs %.0f, the bound %.0f", ErrBoundBeaten, m.Mode, m.Cost, s.Bound.Cost)
		}
	}
	return s, nil
}

// loadIDs sets request i's block ids from cfg.IDs when they are not
// held, and holds the request (a workload kept on disk would lose them
// otherwise); the caller drops them (dropIDs) once done.
func loadIDs(cfg Config, i int) error {
	if cfg.IDs == nil || cfg.Workload.Req(i).HashIDs != nil {
		return nil
	}
	cfg.Workload.Hold(i)
	r := cfg.Workload.Req(i)
	ids, err := cfg.IDs(i)
	if err != nil {
		return fmt.Errorf("simulate: request %d's block ids: %w", i, err)
	}
	if len(ids)*cfg.Workload.BlockSize < r.InputLength {
		return fmt.Errorf("simulate: request %d's block ids: %d ids cannot hold its %d tokens (its source changed?)", i, len(ids), r.InputLength)
	}
	r.HashIDs = ids
	return nil
}

// dropIDs drops the block ids loadIDs set, and the hold.
func dropIDs(cfg Config, i int) {
	if cfg.IDs == nil {
		return
	}
	cfg.Workload.Req(i).HashIDs = nil
	cfg.Workload.Release(i)
}

// loadStretchIDs sets the ids of every request a stretch of events
// needs: a wake-up's or request's own, and at a response the next
// turn's (the response's output tokens are taken from its prompt).
func loadStretchIDs(cfg Config, evs []workload.Event) error {
	if cfg.IDs == nil {
		return nil
	}
	for _, ev := range evs {
		i := ev.Request
		if ev.Kind == workload.KindResponse {
			if i = cfg.Workload.Req(i).Next; i < 0 {
				continue
			}
		}
		if err := loadIDs(cfg, i); err != nil {
			return err
		}
	}
	return nil
}
