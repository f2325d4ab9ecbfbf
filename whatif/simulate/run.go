package simulate

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"
	"weak"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// Run plays cfg.Workload three times on identical clusters — without
// hints, with the next-turn oracle and with the hintstream run that
// cfg.Hintstream starts (a real service: loadtest/value) —
// computes the clairvoyant bound, and compares where their prompt tokens
// came from. A run that beats the bound fails Run with ErrBoundBeaten.
func Run(ctx context.Context, cfg Config) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	w := cfg.Workload
	res := Result{Workload: w.Stats(), Workers: cfg.Workers, DeviceBlocks: cfg.DeviceBlocks,
		L3Blocks: cfg.L3Blocks, BlockSize: w.BlockSize, Alpha: cfg.Alpha, AnnounceToolTime: cfg.AnnounceToolTime, Affinity: cfg.Affinity,
		TransferTime: cfg.TransferTime, KVBytesPerToken: cfg.KVBytesPerToken, L3Bandwidth: cfg.L3Bandwidth}
	pr, err := newPrompts(cfg)
	if err != nil {
		return res, err
	}
	for _, m := range []struct {
		mode Mode
		out  *ModeResult
	}{{ModeNoHints, &res.NoHints}, {ModeOracle, &res.Oracle}, {ModeHintstream, &res.Hintstream}} {
		cfg.Logger.Info("simulate: run", "mode", m.mode, "requests", w.Len())
		r, err := runMode(ctx, cfg, pr, m.mode, nil)
		if err != nil {
			return res, fmt.Errorf("simulate: %s run: %w", m.mode, err)
		}
		*m.out = r
	}
	var boundHits []int
	if res.Bound, boundHits, err = boundMode(cfg, pr); err != nil {
		return res, err
	}
	if res.Reachable, err = reachableMode(cfg, pr); err != nil {
		return res, err
	}
	res.Links = w.Links()
	for _, m := range []*ModeResult{&res.NoHints, &res.Hintstream, &res.Oracle, &res.Bound, &res.Reachable} {
		m.Saving = res.NoHints.Cost - m.Cost
	}
	res.Recovered = ratio(res.Hintstream.Saving, res.Oracle.Saving)
	res.OfBound = ratio(res.Hintstream.Saving, res.Bound.Saving)
	res.OfReachable = ratio(res.Hintstream.Saving, res.Reachable.Saving)
	res.Mechanism = mechanism(cfg, pr, res.Hintstream, boundHits)
	for _, m := range []ModeResult{res.NoHints, res.Hintstream, res.Oracle} {
		if m.Cost < res.Reachable.Cost-1e-6*max(1, res.Reachable.Cost) {
			res.ReachableBeaten = append(res.ReachableBeaten, m.Mode)
		}
	}
	announced := func(i int) bool { return w.Req(i).HasWakeup }
	res.Hintstream.Lost = lostSavings(res.Hintstream, res.Bound, res.NoHints, boundHits, announced)
	res.Oracle.Lost = lostSavings(res.Oracle, res.Bound, res.NoHints, boundHits, announced)
	// The bound's cost has no L3 term and is a whole number of tokens; a
	// run's is within float rounding of its own sum.
	for _, m := range []ModeResult{res.NoHints, res.Hintstream, res.Oracle} {
		if m.Cost < res.Bound.Cost-1e-6*max(1, res.Bound.Cost) {
			return res, fmt.Errorf("%w: %s costs %.0f, the bound %.0f", ErrBoundBeaten, m.Mode, m.Cost, res.Bound.Cost)
		}
	}
	return res, nil
}

// clusterConfig is the cluster every run starts from.
func clusterConfig(cfg Config) cluster.Config {
	c := cluster.Config{Workers: cfg.Workers, DeviceBlocks: cfg.DeviceBlocks, L3Blocks: cfg.L3Blocks,
		BlockSize: cfg.Workload.BlockSize, Model: cfg.Workload.Model}
	if cfg.TransferTime {
		c.KVBytesPerToken, c.L3Bandwidth = cfg.KVBytesPerToken, cfg.L3Bandwidth
	}
	return c
}

// prompts hashes each request's prompt once for all runs: its blocks'
// hashes, its pages' keys and its blocks' local hashes (for the KV
// events), read-only once made, so the runs share them. Tokens are
// large (half a megabyte at agentic lengths): Simulate's runs play a
// step of events each in turn, and the tokens made in a step are held
// until it ends (step), so that every run's asking costs one making;
// after it, a run asking while another still holds them (its last
// prompts, its engine's request in flight) gets the same ones, through
// a weak pointer: made again only once no run holds them. A prompt is kept
// from its first use until release drops it: Simulate releases a
// request once every run has played its response, so what is held is the
// requests in flight or announced, not the trace.
type prompts struct {
	mu     sync.Mutex // runs of Simulate share it
	w      *workload.Workload
	hasher *cluster.Cluster
	held   map[int]*cluster.Prompt // Tokens nil
	// tokens are the held prompts' tokens, while some run holds them.
	tokens map[int]weakTokens
	// step, when not nil (Simulate), holds the tokens made since the
	// last stepDone: the runs play a step of events each in turn.
	step map[int][]uint32
	// pins are the requests' pin keys, made once for every engine run
	// and released with the prompts.
	pins *pinKeys
}

func newPrompts(cfg Config) (*prompts, error) {
	h, err := cluster.NewCluster(clusterConfig(cfg))
	if err != nil {
		return nil, err
	}
	return &prompts{w: cfg.Workload, hasher: h, held: map[int]*cluster.Prompt{}, tokens: map[int]weakTokens{},
		pins: newPinKeys()}, nil
}

func (p *prompts) get(i int) (*cluster.Prompt, error) {
	return p.prompt(i, true)
}

// hashes is get without the tokens (nil): for callers that use only Seq
// and Keys (not Route, Serve or Prefetch, which make KV events from the
// tokens).
func (p *prompts) hashes(i int) (*cluster.Prompt, error) {
	return p.prompt(i, false)
}

func (p *prompts) prompt(i int, withTokens bool) (*cluster.Prompt, error) {
	p.mu.Lock()
	hp, ok := p.held[i]
	var tokens []uint32
	if ok && withTokens {
		if tokens = p.step[i]; tokens == nil {
			tokens = p.tokens[i].get()
		}
	}
	p.mu.Unlock()
	if ok && (!withTokens || tokens != nil) {
		out := *hp
		out.Tokens = tokens
		return &out, nil
	}
	if r := p.w.Req(i); r.HashIDs == nil && r.InputLength > 0 {
		// Config.IDs's ids are set before a request's events and
		// dropped after its response: asked outside them is a bug, not
		// a prompt to play empty.
		return nil, fmt.Errorf("simulate: request %d's block ids are not loaded", i)
	}
	// Clipped: an append to a shared prompt's tokens copies them.
	tokens = slices.Clip(p.w.PromptTokens(i))
	p.mu.Lock()
	p.tokens[i] = makeWeakTokens(tokens)
	if p.step != nil {
		p.step[i] = tokens
	}
	p.mu.Unlock()
	if !ok {
		// Hashed outside the lock: two runs may both hash a prompt, to
		// the same result; the first one held is the one every run gets.
		pr, err := p.hasher.Prompt(tokens)
		if err != nil {
			return nil, err
		}
		pr.Local = kvevents.LocalBlockHashes(tokens, p.w.BlockSize)
		pr.Tokens = nil
		p.mu.Lock()
		if hp, ok = p.held[i]; !ok {
			hp = pr
			p.held[i] = hp
		}
		p.mu.Unlock()
	}
	out := *hp
	if withTokens {
		out.Tokens = tokens
	}
	return &out, nil
}

// unkeyed is request i's prompt as get makes it but with empty L3 keys
// (one a block) and no local hashes, made for this caller alone (not
// held, unless get holds it already): for the hint-reachable bound's
// streamed play, whose cluster's L3 decides nothing it reads and which
// publishes no KV event, so that it does not hash every page of the
// trace a second time (the play makes each prompt again, keys and all).
func (p *prompts) unkeyed(i int) (*cluster.Prompt, error) {
	p.mu.Lock()
	hp, ok := p.held[i]
	p.mu.Unlock()
	if ok {
		out := *hp
		return &out, nil
	}
	if r := p.w.Req(i); r.HashIDs == nil && r.InputLength > 0 {
		return nil, fmt.Errorf("simulate: request %d's block ids are not loaded", i)
	}
	tokens := p.w.PromptTokens(i)
	seq := kvevents.PromptHashes(tokens, p.w.BlockSize)
	return &cluster.Prompt{Tokens: tokens, Seq: seq, Keys: make([]string, len(seq))}, nil
}

// release drops request i's hashes and pin keys; a later get hashes it
// again.
func (p *prompts) release(i int) {
	p.mu.Lock()
	delete(p.held, i)
	delete(p.tokens, i)
	p.mu.Unlock()
	p.pins.release(p.w.Req(i).ID)
}

// stepDone lets go of the tokens made in the step the runs played.
func (p *prompts) stepDone() {
	p.mu.Lock()
	clear(p.step)
	p.mu.Unlock()
}

// weakTokens are a prompt's tokens without holding them.
type weakTokens struct {
	first weak.Pointer[uint32]
	n     int
}

func makeWeakTokens(tokens []uint32) weakTokens {
	if len(tokens) == 0 {
		return weakTokens{}
	}
	return weakTokens{weak.Make(&tokens[0]), len(tokens)}
}

// get is the tokens, or nil once no one holds them (or none were made).
func (w weakTokens) get() []uint32 {
	first := w.first.Value()
	if first == nil {
		return nil
	}
	return unsafe.Slice(first, w.n)
}

// size is how many prompts are held.
func (p *prompts) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}

// hooks is what a mode adds to the common play: the hints, and with
// affinity on the worker the frontend passes to the router.
type hooks interface {
	wakeup(ctx context.Context, i int) error
	// preferred is the worker request i is pinned to, if any.
	preferred(ctx context.Context, i int) (worker int, ok bool, err error)
	// request tells the mode of request i as it arrives, before it is
	// served (arrival.go).
	request(ctx context.Context, i int) error
	response(ctx context.Context, i, worker int) error
	finish(res *ModeResult)
	close()
}

// player holds one run's state.
type player struct {
	cfg          Config
	w            *workload.Workload
	pr           *prompts
	cl           *cluster.Cluster
	res          ModeResult
	prefetchedTo map[int]int // request → worker a prefetch for it went to
	// extent is how many leading blocks of request i its prefetch's worker
	// held right after the prefetch.
	extent map[int]int
	// out is what each served request got, until forget drops it
	// (Simulate, once it has folded the request into its sums) or to the
	// end (Run, whose mechanism breakdown reads every request's).
	out map[int]reqOut
	// loaded is, per request with a prefetch not yet used, which of its
	// blocks the prefetch loaded: from start, n blocks, on worker.
	loaded map[int]loadedRange
	events int // played, for Config.Progress
	// arriving is the prompt of the request arriving, made once for its
	// request hook and serve (arrival.go).
	arriving    *cluster.Prompt
	arrivingReq int
	// forgetSessions says hooks may drop a conversation's records after
	// its last turn (Workload.SessionLast) is folded (Simulate).
	forgetSessions bool
	// recent are the prompts this run made last (get), tokens and all: a
	// request's wake-up, its prefetch and its arrival come close
	// together, and a 130K-token prompt is half a megabyte to make.
	recent     [recentPrompts]*cluster.Prompt
	recentReq  [recentPrompts]int
	recentNext int
}

// recentPrompts is how many prompts a run keeps (player.recent).
const recentPrompts = 4

// get is request i's prompt with its tokens (prompts.get), made again
// only when this run has not used it among its last recentPrompts.
func (p *player) get(i int) (*cluster.Prompt, error) {
	for k, pr := range p.recent {
		if pr != nil && p.recentReq[k] == i {
			return pr, nil
		}
	}
	pr, err := p.pr.get(i)
	if err != nil {
		return nil, err
	}
	p.recent[p.recentNext], p.recentReq[p.recentNext] = pr, i
	p.recentNext = (p.recentNext + 1) % recentPrompts
	return pr, nil
}

type loadedRange struct{ worker, start, n int }

// reqOut is what one request got in a run.
type reqOut struct {
	cost   float64 // prefill cost: recomputed tokens + Alpha × L3 tokens
	routed int     // the worker it was served on
	why    cause
	served servedInfo
	// warmup is the part of cost a speculative prefill at its response
	// spent (peer_run.go): charged to no block (Mechanism.Warmup).
	warmup float64
}

// forgetter is a hook that holds per-request state it can drop once the
// request is folded (Simulate).
type forgetter interface{ forget(i int) }

// forget drops what the run holds for request i: Simulate calls it once
// every run has played all of i's events and folded its results.
func (r *run) forget(i int) {
	delete(r.p.out, i)
	delete(r.p.extent, i)
	delete(r.p.prefetchedTo, i)
	if f, ok := r.h.(forgetter); ok {
		f.forget(i)
	}
}

// servedInfo is what a request found, for the lost-savings breakdown.
type servedInfo struct {
	held, unready int  // leading blocks held on its worker; those still loading
	dev, l3       int  // blocks found ready on the device, and loaded from L3 after them
	pinLapsed     bool // its previous turn's pin had lapsed when it came
}

// runMode plays one run; pol, for a policy run (Simulate), is the
// in-process engine's policy and names the run.
func runMode(ctx context.Context, cfg Config, pr *prompts, mode Mode, pol *Policy) (ModeResult, error) {
	r, err := startRun(ctx, cfg, pr, mode, pol)
	if err != nil {
		return ModeResult{Mode: mode}, err
	}
	defer r.h.close()
	if err := r.p.play(ctx, r.h, 0, r.p.w.EventRange(0, r.p.w.NumEvents())); err != nil {
		return r.p.res, err
	}
	r.elapsed = time.Since(r.start)
	return r.finish(), nil
}

// run is one run being played, a range of events at a time.
type run struct {
	p       *player
	h       hooks
	start   time.Time
	elapsed time.Duration // spent playing, summed over the ranges
}

// startRun builds mode's cluster and hooks.
func startRun(ctx context.Context, cfg Config, pr *prompts, mode Mode, pol *Policy) (*run, error) {
	start := time.Now()
	p := &player{cfg: cfg, w: cfg.Workload, pr: pr, res: ModeResult{Mode: mode},
		prefetchedTo: map[int]int{}, extent: map[int]int{}, loaded: map[int]loadedRange{}, out: map[int]reqOut{}}
	var h hooks
	var err error
	switch mode {
	case ModeNoHints:
		p.cl, err = cluster.NewCluster(clusterConfig(cfg))
		h = noHints{}
	case ModeOracle:
		p.cl, err = cluster.NewCluster(clusterConfig(cfg))
		h = &oracle{p: p, pinned: map[int]int{}}
	case ModeHintstream:
		if cfg.Hintstream == nil {
			return nil, fmt.Errorf("%w: no Hintstream run to start", ErrConfig)
		}
		var ext Hooks
		if ext, err = cfg.Hintstream(ctx, &Player{p: p}); ext != nil {
			h = external{ext}
		}
	default:
		if pol == nil {
			return nil, fmt.Errorf("%w: no policy for run %q", ErrConfig, mode)
		}
		p.cfg.Affinity = pol.Affinity
		if pol.Peer != nil {
			h, err = startPeer(p, *pol) // peer_run.go
		} else {
			h, err = startEngine(p, *pol)
		}
	}
	if err != nil {
		return nil, err
	}
	return &run{p: p, h: h, start: start, elapsed: time.Since(start)}, nil
}

// finish summarises a run that played every event. Requests not yet
// forgotten are put in the per-request arrays (all of them for Run).
func (r *run) finish() ModeResult {
	p := r.p
	r.h.finish(&p.res)
	for _, l := range p.loaded {
		p.res.WastedPrefetchBlocks += int64(l.n)
	}
	if len(p.out) > 0 {
		n := p.w.Len()
		p.res.PerRequestCost, p.res.causes, p.res.extent = make([]float64, n), make([]cause, n), make([]int, n)
		p.res.served = make([]servedInfo, n)
		for i, o := range p.out {
			p.res.PerRequestCost[i], p.res.causes[i], p.res.served[i] = o.cost, o.why, o.served
		}
		for i, n := range p.extent {
			p.res.extent[i] = n
		}
	}
	p.res.prefetchedTo = p.prefetchedTo
	p.summarise()
	p.res.Elapsed = r.elapsed
	return p.res
}

// play plays evs, the workload's events from from on. The caller reads
// them (EventRange): runs side by side share one stretch.
func (p *player) play(ctx context.Context, h hooks, from int, evs []workload.Event) error {
	to := from + len(evs)
	for k := from; k < to; k++ {
		ev := evs[k-from]
		if p.cfg.Progress != nil && k%1024 == 1023 {
			p.cfg.Progress(1024)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		p.cl.Advance(ev.At)
		i := ev.Request
		var err error
		switch ev.Kind {
		case workload.KindWakeup:
			p.res.Wakeups++
			err = h.wakeup(ctx, i)
		case workload.KindRequest:
			err = p.arrive(ctx, h, i) // arrival.go
		case workload.KindResponse:
			err = h.response(ctx, i, p.out[i].routed)
		}
		if err != nil {
			return fmt.Errorf("%s of request %d at %v: %w", ev.Kind, i, ev.At, err)
		}
	}
	if p.cfg.Progress != nil && to == p.w.NumEvents() {
		p.cfg.Progress(p.w.NumEvents() % 1024)
	}
	return nil
}

// serve routes request i with the router model, or to the worker it is
// pinned to, and runs it.
func (p *player) serve(ctx context.Context, h hooks, i int) (int, error) {
	r := p.w.Req(i)
	pr, err := p.prompt(i)
	if err != nil {
		return 0, err
	}
	wk, pinned, err := h.preferred(ctx, i)
	if err != nil {
		return 0, err
	}
	if !pinned {
		if wk, _, err = p.cl.Route(pr); err != nil {
			return 0, err
		}
	} else {
		p.res.Pinned++
	}
	si := servedInfo{held: p.cl.Workers[wk].Cache.Prefix(pr.Seq), pinLapsed: p.pinLapsed(i)}
	out, err := p.cl.Serve(wk, pr, r.InputLength, p.w.Service.PrefillTime(r.InputLength), r.ResponseAt)
	if err != nil {
		return 0, err
	}
	p.res.Requests++
	p.res.PromptTokens += int64(r.InputLength)
	p.res.DeviceHitTokens += int64(out.DeviceTokens)
	p.res.L3HitTokens += int64(out.L3Tokens)
	p.res.RecomputedTokens += int64(out.RecomputedTokens)
	p.res.UnreadyTokens += int64(out.UnreadyTokens)
	si.unready = out.UnreadyTokens / p.w.BlockSize
	si.dev, si.l3 = out.DeviceTokens/p.w.BlockSize, out.L3Tokens/p.w.BlockSize
	p.out[i] = reqOut{cost: float64(out.RecomputedTokens) + p.cfg.Alpha*float64(out.L3Tokens), routed: wk,
		why: p.classify(i, wk, si), served: si}
	if l, ok := p.loaded[i]; ok {
		// A prefetched block is used when the turn found it ready on the
		// worker it was loaded into; the rest moved for nothing.
		used := 0
		if l.worker == wk {
			used = min(max(out.DeviceTokens/p.w.BlockSize-l.start, 0), l.n)
		}
		p.res.WastedPrefetchBlocks += int64(l.n - used)
		delete(p.loaded, i)
	}
	if to, ok := p.prefetchedTo[i]; ok && to == wk {
		p.res.PrefetchAccurate++
	}
	return wk, nil
}

// prefetch applies a prefetch for request i on worker wk.
func (p *player) prefetch(i, wk int, pr *cluster.Prompt) error {
	start := p.cl.Workers[wk].Cache.Prefix(pr.Seq)
	n, err := p.cl.Prefetch(wk, pr)
	if err != nil {
		return err
	}
	prev, ok := p.loaded[i]
	switch {
	case ok && prev.worker == wk:
		// Sent again to the same worker (the tracker's tool_end
		// prefetch): one range, what is still there counts as used.
		p.loaded[i] = loadedRange{worker: wk, start: prev.start, n: prev.n + n}
	default:
		if ok {
			p.res.WastedPrefetchBlocks += int64(prev.n)
		}
		p.loaded[i] = loadedRange{worker: wk, start: start, n: n}
	}
	p.res.Prefetches++
	p.res.PrefetchedBlocks += int64(n)
	p.prefetchedTo[i] = wk
	p.extent[i] = p.cl.Workers[wk].Cache.Prefix(pr.Seq)
	return nil
}

// pinLapsed says request i's previous turn was pinned (by hintstream's
// slot, "request:<id>", or the oracle's, "session:<id>") and the pin had
// run out by now.
func (p *player) pinLapsed(i int) bool {
	r := p.w.Req(i)
	if r.Prev < 0 {
		return false
	}
	for _, slot := range []string{"request:" + p.w.Req(r.Prev).ID, "session:" + r.Session} {
		if until, ok := p.cl.L3.SlotUntil(slot); ok {
			return until <= p.cl.Now()
		}
	}
	return false
}

func (p *player) summarise() {
	r := &p.res
	r.Cost = float64(r.RecomputedTokens) + p.cfg.Alpha*float64(r.L3HitTokens) + r.WarmupCost
	r.PrefetchAccuracy = ratio(float64(r.PrefetchAccurate), float64(r.Prefetches))
	r.L3 = p.cl.L3.Stats()
	r.PinsHonoured = ratio(float64(r.L3.PinnedKeys-r.L3.PinsBroken), float64(r.L3.PinnedKeys))
	for _, wk := range p.cl.Workers {
		r.DeviceEvictions += wk.Cache.Evictions()
	}
}

type noHints struct{}

func (noHints) wakeup(context.Context, int) error { return nil }
func (noHints) preferred(context.Context, int) (int, bool, error) {
	return 0, false, nil
}
func (noHints) request(context.Context, int) error       { return nil }
func (noHints) response(context.Context, int, int) error { return nil }
func (noHints) finish(*ModeResult)                       {}
func (noHints) close()                                   {}
