// Package routing chooses the worker a prompt would be routed to, with the
// cost function of Dynamo's KV router (its DefaultWorkerSelector), without
// admitting the request or booking its load.
//
// Each dp rank of each registered worker serving the request's model is a
// candidate. Two cost functions (Config.Cost): CostDefault, today's
// Dynamo, which credits the prompt blocks cached on each storage tier
// (device, host_pinned, disk, external) against the prefill blocks; its
// formula and sources are in cost.go. CostClassic, the formula Dynamo's
// router used before tiers, for older deployments, below. Both hash the
// prompt with the block seed of its lora_name and cache_salt
// (kvevents.BlockSeed).
//
// # The classic logit
//
// With isl the prompt's token count, bs the worker's kv_block_size,
// overlap the leading prompt blocks it holds on device, and its latest
// load report (a worker that never reported counts as idle):
//
//	prefill_tokens = max(isl - overlap*bs, 0) + active_prefill_tokens
//	prefill_blocks = prefill_tokens / bs                  (float division)
//	decode_blocks  = active_decode_blocks + floor(isl/bs) (+ virtual load)
//	logit          = overlap_score_weight * prefill_blocks + decode_blocks
//
// Lower is better. This is Dynamo's
// `overlap_weight * potential_prefill_block + decode_block` from
// lib/kv-router/src/scheduling/selector.rs (earlier
// lib/llm/src/kv_router/scheduler.rs) in ai-dynamo/dynamo, fed as its
// ActiveSequences::potential_blocks_and_tokens feeds it: potential prefill
// tokens are new_tokens(isl, overlap) + the worker's active tokens, and
// potential decode blocks are the request's new blocks + the worker's
// active blocks (lib/kv-router/src/sequences, single.rs). Where hintstream
// cannot see what Dynamo sees, it says so:
//
//   - Dynamo counts as new only the request's full blocks not already held
//     by that worker's in-flight requests; hintstream cannot see those, so
//     all floor(isl/bs) full blocks count. Within one block size this adds
//     the same number to every candidate and changes no choice.
//   - The router tracks active load itself; hintstream takes
//     active_prefill_tokens and active_decode_blocks from kv.load reports,
//     the numbers Dynamo publishes as ActiveLoad from that same tracker.
//   - A registered worker with no report is idle (0 and 0), as in Dynamo's
//     tracker for a worker with nothing in flight. Dynamo's other fallback
//     (prefill isl/bs with no overlap credit, decode floor(isl/bs)) is for a
//     worker missing from its tracker, which has no counterpart here.
//   - Dynamo has one block size per router; hintstream uses each worker's
//     own, so a logit is in that worker's blocks.
//
// The product is rounded to float64 before the add, as Rust computes it,
// so Go never fuses it into an FMA and the logits match Dynamo's bits.
//
// # The choice
//
// Temperature 0 (the default): the lowest logit of either cost. Dynamo
// breaks exact ties
// at random (in older versions by the smaller radix tree first); hintstream
// must give the same answer on every instance and in replay, so it breaks
// them by the longest device overlap, then the lowest worker id, then the lowest
// dp rank. That is hintstream's one deliberate deviation at temperature 0.
//
// Temperature > 0: Dynamo's softmax_sample over the candidates ordered by
// (worker id, dp rank): logits divided by their range, negated, divided by
// the temperature, softmaxed; the first candidate whose cumulative
// probability reaches the draw wins. Dynamo draws at random; hintstream
// draws from the request id (RequestIDSampler), so every instance and a
// replay pick the same candidate for the same request and state.
//
// # Spreading
//
// Off by default, because it departs from the router on purpose: see
// SpreadConfig. When on, each choice adds floor(isl/bs) virtual decode
// blocks to the chosen candidate, halving every half-life, and Select holds
// a lock across choosing and booking so concurrent wake-ups see each
// other.
package routing

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// ErrNoWorker means no registered worker can serve the request's model.
var ErrNoWorker = errors.New("no registered worker serves this model")

// Workers is the registry view the selector needs.
type Workers interface {
	Workers() []schemas.WorkerRecord
}

// Overlapper is the index view the selector needs.
type Overlapper interface {
	Overlap(seqHashes []uint64) map[kvevents.WorkerKey]int
}

// OverlapFiller is an Overlapper that can fill a caller's map instead of
// returning a new one (*index.Memory is one): Select then reuses one
// map per block size across wake-ups. out is cleared first.
type OverlapFiller interface {
	OverlapInto(seqHashes []uint64, out map[kvevents.WorkerKey]int)
}

// LowerOverlapper is the index view of the lower tiers (host_pinned,
// disk, external) that the default cost credits; *index.Memory is one.
// An Overlapper without it has no lower-tier blocks.
type LowerOverlapper interface {
	LowerOverlap(seqHashes []uint64, device map[kvevents.WorkerKey]int) map[kvevents.WorkerKey]index.LowerOverlap
}

// Candidate is one (worker, dp rank) considered for a prompt, with the
// terms of its logit.
type Candidate struct {
	Worker    kvevents.WorkerKey
	Endpoint  string // the dp rank's hint endpoint
	BlockSize int
	// Overlap is the number of leading prompt blocks cached on the device.
	Overlap int
	// HostPinned, Disk and External are the prompt blocks past the device
	// prefix cached on each lower tier, each continuing the one before
	// (index.LowerOverlap). The classic cost ignores them.
	HostPinned, Disk, External int
	Load                       schemas.ActiveLoad
	// PrefillBlocks is, for the default cost, Dynamo's raw_prefill_blocks
	// ((active_prefill_tokens + isl) / BlockSize, before credits); for the
	// classic cost (uncached prompt tokens + active_prefill_tokens) /
	// BlockSize.
	PrefillBlocks float64
	// OverlapCredit is the default cost's overlap_credit_blocks, the
	// blocks credited against PrefillBlocks (0 for the classic cost).
	OverlapCredit float64
	// DecodeBlocks is active_decode_blocks + the prompt's full blocks +
	// VirtualBlocks.
	DecodeBlocks float64
	// VirtualBlocks is spreading's decayed virtual load (0 when off).
	VirtualBlocks float64
	// Logit is the cost; lower wins. Default cost:
	// PrefillLoadScale*max(PrefillBlocks-OverlapCredit, 0) + DecodeBlocks;
	// classic: OverlapScoreWeight*PrefillBlocks + DecodeBlocks.
	Logit float64
}

// Selector picks the worker for a prompt as described in the package
// documentation. It is safe for concurrent use.
type Selector struct {
	workers Workers
	index   Overlapper
	lower   LowerOverlapper // nil: no lower tiers, or the classic cost
	loads   *LoadTable
	cfg     Config
	now     func() time.Time
	sample  Sampler

	mu     sync.Mutex    // guards spread; held across choose and book
	spread *virtualLoads // nil when spreading is off

	scratch sync.Pool // *scratch: one choice's buffers, reused
}

// scratch holds what one choice needs and drops: the prompt's hashes,
// the overlaps of each block size, the candidates. Pooled per Selector so
// a wake-up allocates none of them.
type scratch struct {
	hashes []uint64
	tiers  []blockTiers // [:used] are this choice's
	used   int
	cands  []Candidate
}

// blockTiers is the prompt's overlap for one block size.
type blockTiers struct {
	bs     uint32
	device map[kvevents.WorkerKey]int
	lower  map[kvevents.WorkerKey]index.LowerOverlap
	reuse  map[kvevents.WorkerKey]int // device's map when the index fills one
}

func (s *Selector) getScratch() *scratch {
	if sc, ok := s.scratch.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

// putScratch drops what the candidates point to (endpoints, loads) and
// returns sc to the pool.
func (s *Selector) putScratch(sc *scratch) {
	clear(sc.cands)
	sc.cands = sc.cands[:0]
	for i := range sc.tiers[:sc.used] {
		sc.tiers[i].device, sc.tiers[i].lower = nil, nil
	}
	sc.used = 0
	s.scratch.Put(sc)
}

// overlaps returns the prompt's overlaps for block size bs, computing
// them on its first use in this choice.
func (s *Selector) overlaps(sc *scratch, req *schemas.RequestEvent, bs uint32, seed uint64) *blockTiers {
	for i := range sc.tiers[:sc.used] {
		if sc.tiers[i].bs == bs {
			return &sc.tiers[i]
		}
	}
	if sc.used == len(sc.tiers) {
		sc.tiers = append(sc.tiers, blockTiers{})
	}
	ov := &sc.tiers[sc.used]
	sc.used++
	ov.bs = bs
	sc.hashes = promptHashes(sc.hashes[:0], req, bs, seed)
	if f, ok := s.index.(OverlapFiller); ok {
		if ov.reuse == nil {
			ov.reuse = map[kvevents.WorkerKey]int{}
		}
		f.OverlapInto(sc.hashes, ov.reuse)
		ov.device = ov.reuse
	} else {
		ov.device = s.index.Overlap(sc.hashes)
	}
	if s.lower != nil {
		ov.lower = s.lower.LowerOverlap(sc.hashes, ov.device)
	}
	return ov
}

// promptHashes appends the prompt's sequence hashes at block size bs to
// dst: from its token ids, or else the sequence hashes it came with when
// they are at bs. A prompt known only by hashes at another block size has
// none at bs: it overlaps nothing on a worker of that block size (Dynamo's
// own router has one block size, its trace's).
func promptHashes(dst []uint64, req *schemas.RequestEvent, bs uint32, seed uint64) []uint64 {
	if len(req.TokenIDs) == 0 && len(req.SequenceHashes) > 0 {
		if req.SequenceBlockSize != bs {
			return dst
		}
		return append(dst, req.SequenceHashes...)
	}
	return kvevents.AppendPromptHashesSeeded(dst, req.TokenIDs, int(bs), seed)
}

// PromptLen is the prompt's length in tokens: its token ids, or for a
// prompt known by sequence hashes its prompt_tokens, else its full
// blocks'.
func PromptLen(req *schemas.RequestEvent) int {
	switch {
	case len(req.TokenIDs) > 0:
		return len(req.TokenIDs)
	case req.PromptTokens > 0:
		return int(req.PromptTokens)
	}
	return len(req.SequenceHashes) * int(req.SequenceBlockSize)
}

// NewSelector returns a Selector over a registry, an index and loads,
// configured by DefaultConfig and then opts. A setting it cannot use
// (Config.Validate) fails it with an error wrapping ErrInvalidConfig;
// nothing is replaced behind the caller's back.
func NewSelector(w Workers, ix Overlapper, loads *LoadTable, opts ...Option) (*Selector, error) {
	o := options{cfg: DefaultConfig(), now: time.Now, sampler: RequestIDSampler(0)}
	for _, opt := range opts {
		opt(&o)
	}
	cfg := o.cfg
	if cfg.Cost == "" {
		cfg.Cost = DefaultCost
	}
	if cfg.Spread.HalfLife == 0 {
		cfg.Spread.HalfLife = DefaultConfig().Spread.HalfLife
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if loads == nil {
		loads = NewLoadTable()
	}
	s := &Selector{workers: w, index: ix, loads: loads, cfg: cfg, now: o.now, sample: o.sampler}
	if lo, ok := ix.(LowerOverlapper); ok && cfg.Cost != CostClassic {
		s.lower = lo
	}
	if cfg.Spread.Enabled {
		s.spread = newVirtualLoads(cfg.Spread.HalfLife)
	}
	return s, nil
}

// Config returns the configuration in effect.
func (s *Selector) Config() Config { return s.cfg }

// Candidates lists every (worker, dp rank) that serves the request's
// model (every worker when the request names none), with its overlap,
// load and logit, in registry order. It books nothing. Workers without a
// block size are skipped: no logit can be computed for them.
func (s *Selector) Candidates(req *schemas.RequestEvent) []Candidate {
	sc := s.getScratch()
	defer s.putScratch(sc)
	if s.spread == nil {
		return cloneCandidates(s.candidates(sc, req, time.Time{}))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return cloneCandidates(s.candidates(sc, req, s.now()))
}

// cloneCandidates copies the scratch's candidates for a caller to keep
// (nil when there are none, as before the scratch).
func cloneCandidates(c []Candidate) []Candidate {
	if len(c) == 0 {
		return nil
	}
	return slices.Clone(c)
}

// Select returns the chosen candidate, or ErrNoWorker. With spreading on
// it also books the choice's virtual load.
func (s *Selector) Select(req *schemas.RequestEvent) (Candidate, error) {
	sc := s.getScratch()
	defer s.putScratch(sc)
	if s.spread == nil {
		return s.choose(req, s.candidates(sc, req, time.Time{}))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	c, err := s.choose(req, s.candidates(sc, req, now))
	if err == nil {
		s.spread.add(c.Worker, now, float64(PromptLen(req)/c.BlockSize))
	}
	return c, err
}

// candidates lists the candidates into sc.cands (valid until sc is put
// back).
func (s *Selector) candidates(sc *scratch, req *schemas.RequestEvent, now time.Time) []Candidate {
	out := sc.cands[:0]
	isl := PromptLen(req)
	// The request's LoRA adapter and cache namespace choose the block seed,
	// as in Dynamo's compute_block_hash_for_seq (see kvevents.BlockSeed).
	seed := kvevents.BlockSeed(req.LoraName, req.CacheSalt)
	for _, w := range s.workersFor(req.Model) {
		if req.Model != "" && w.Model != "" && w.Model != req.Model {
			continue
		}
		if w.KvBlockSize == 0 {
			continue
		}
		bs := int(w.KvBlockSize)
		ov := s.overlaps(sc, req, w.KvBlockSize, seed)
		for rank, ep := range w.HintEndpoints {
			k := kvevents.WorkerKey{WorkerID: w.WorkerID, DpRank: uint32(rank)}
			lo := ov.lower[k]
			c := Candidate{Worker: k, Endpoint: ep, BlockSize: bs, Overlap: ov.device[k],
				HostPinned: lo.HostPinned, Disk: lo.Disk, External: lo.External, Load: s.loads.Get(k)}
			if s.spread != nil {
				c.VirtualBlocks = s.spread.get(k, now)
			}
			out = append(out, c)
		}
	}
	if s.cfg.Cost == CostClassic {
		for i := range out {
			s.score(&out[i], isl)
		}
		sc.cands = out
		return out
	}
	var minActive uint64 // Dynamo: min over the eligible candidates, 0 if none
	if s.cfg.OverlapScoreCreditDecay > 0 && len(out) > 0 {
		minActive = out[0].Load.PrefillTokens()
		for _, c := range out[1:] {
			minActive = min(minActive, c.Load.PrefillTokens())
		}
	}
	for i := range out {
		s.defaultCost(&out[i], isl, minActive)
	}
	sc.cands = out
	return out
}

// score fills in the classic cost's logit terms. Counts are summed as
// float64: exact up to 2^53 like Dynamo's usize sums, and no overflow on
// absurd reports.
func (s *Selector) score(c *Candidate, isl int) {
	newTokens := max(isl-c.Overlap*c.BlockSize, 0)
	c.PrefillBlocks = (float64(newTokens) + float64(c.Load.PrefillTokens())) / float64(c.BlockSize)
	c.DecodeBlocks = float64(c.Load.DecodeBlocks()) + float64(isl/c.BlockSize)
	if c.VirtualBlocks != 0 {
		c.DecodeBlocks += c.VirtualBlocks
	}
	// The conversion rounds the product, which forbids fusing it with the
	// add (Go spec, "Floating-point operators"): Rust does not fuse either.
	c.Logit = float64(s.cfg.OverlapScoreWeight*c.PrefillBlocks) + c.DecodeBlocks
}

func (s *Selector) choose(req *schemas.RequestEvent, cands []Candidate) (Candidate, error) {
	if len(cands) == 0 {
		return Candidate{}, ErrNoWorker
	}
	if s.cfg.Temperature == 0 {
		best := cands[0]
		for _, c := range cands[1:] {
			if better(c, best) {
				best = c
			}
		}
		return best, nil
	}
	slices.SortFunc(cands, func(a, b Candidate) int {
		return cmp.Or(cmp.Compare(a.Worker.WorkerID, b.Worker.WorkerID), cmp.Compare(a.Worker.DpRank, b.Worker.DpRank))
	})
	logits := make([]float64, len(cands))
	for i, c := range cands {
		logits[i] = c.Logit
	}
	return cands[softmaxSample(logits, s.cfg.Temperature, s.sample(req))], nil
}

// better is the temperature-0 order: lower logit, then longer overlap,
// then lower worker id, then lower dp rank.
func better(a, b Candidate) bool {
	if a.Logit != b.Logit {
		return a.Logit < b.Logit
	}
	if a.Overlap != b.Overlap {
		return a.Overlap > b.Overlap
	}
	if a.Worker.WorkerID != b.Worker.WorkerID {
		return a.Worker.WorkerID < b.Worker.WorkerID
	}
	return a.Worker.DpRank < b.Worker.DpRank
}
