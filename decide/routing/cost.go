package routing

import "math"

// The default cost (CostDefault) is today's Dynamo DefaultWorkerSelector,
// DefaultWorkerScorer::worker_logit in
// lib/kv-router/src/scheduling/selector/default.rs, fed as
// WorkerSelectionInput::row in selector/mod.rs feeds it (ai-dynamo/dynamo
// commit 07a6c9ce3bb096cfaf353fe69ee578e105c6a512), with the per-tier
// overlap of scheduling/overlap.rs (commit
// 13a4eeab3ff95e09dfa58402a063e9b0f0ac4bcd). For one candidate, with bs
// its block size, isl the prompt's tokens, d/h/k/x its device, host_pinned,
// disk and external blocks (each tier continuing the one before, see
// index.Memory.LowerOverlap):
//
//	effective      = d + host_w*h + disk_w*k + disk_w*x
//	cached_tokens  = round(effective * bs)
//	raw_prefill    = (active_prefill_tokens + isl - min(cached_tokens, isl) + cached_tokens) / bs
//	decay          = 1 / (1 + credit_decay * excess/ceil(isl/bs)),
//	                 excess = (active_prefill_tokens - min over candidates) / bs
//	                 (1 when credit_decay is 0)
//	overlap_credit = credit*decay*d + host_w*h + disk_w*(k+x) + shared
//	cost           = prefill_load_scale * max(raw_prefill - overlap_credit, 0)
//	               + decode_blocks + decode_active_request_weight * active_requests
//
// Where hintstream cannot see what Dynamo's router sees:
//
//   - shared is shared_cache_multiplier * the blocks a shared KV store
//     (HiCache L3) holds past the device prefix; hintstream queries no
//     shared store, so it is 0, as in Dynamo with --shared-cache-type none
//     (its default, where the multiplier is 0).
//   - decode_blocks is active_decode_blocks + the request's blocks not
//     already held by the worker's active sequences; hintstream counts
//     all floor(isl/bs) full blocks (as the classic cost does), the same
//     for every candidate of one block size.
//   - active_requests is 0: ActiveLoad carries no such count.
//   - Dynamo gives a worker with no load entry raw_prefill = isl/bs;
//     hintstream treats a registered worker with no report as idle (zero
//     load), which is the same number since cached_tokens <= isl always
//     holds here (the tiers never cover more blocks than the prompt has).
//   - Dynamo has one block size per router; each candidate here uses its
//     own, so the decay's min is over all candidates' active tokens.
//
// Products are rounded to float64 before each add (explicit conversions),
// so Go never fuses them into an FMA and the bits match Rust's.

// CostInput is one candidate's inputs to the default cost.
type CostInput struct {
	BlockSize int // > 0
	ISL       int // the prompt's tokens
	// Device, HostPinned, Disk and External are the prompt blocks cached
	// on each tier, each continuing the one before (index.LowerOverlap).
	Device, HostPinned, Disk, External int
	ActivePrefillTokens                uint64
	// MinActivePrefillTokens is the least ActivePrefillTokens among the
	// candidates (only the credit decay uses it).
	MinActivePrefillTokens uint64
	// DecodeBlocks is Dynamo's potential decode blocks: active decode
	// blocks plus the request's blocks that count as new.
	DecodeBlocks   float64
	ActiveRequests uint64
}

// CostTerms are the default cost and the terms it is made of.
type CostTerms struct {
	RawPrefillBlocks float64 // Dynamo's raw_prefill_blocks, before credits
	OverlapCredit    float64 // overlap_credit_blocks
	Cost             float64 // the logit; lower wins
}

// DefaultCost is the default cost (see the formula above) of one
// candidate under c's weights. It is a pure function of its inputs, so
// tests and the reference model can hold it to Dynamo's numbers.
func (c Config) DefaultCost(in CostInput) CostTerms {
	bs := float64(in.BlockSize)
	effective := float64(in.Device)
	// Dynamo adds each lower tier's hits * weight, skipping zeros.
	for _, t := range [...]struct {
		n int
		w float64
	}{{in.HostPinned, c.HostCacheHitWeight}, {in.Disk, c.DiskCacheHitWeight}, {in.External, c.DiskCacheHitWeight}} {
		if t.n != 0 && t.w != 0 {
			effective += float64(float64(t.n) * t.w)
		}
	}
	cached := uint64(max(math.Round(float64(effective*bs)), 0))
	isl := uint64(max(in.ISL, 0))
	active := in.ActivePrefillTokens
	uncached := isl - min(cached, isl)
	var out CostTerms
	out.RawPrefillBlocks = float64(active+uncached+cached) / bs

	decay := 1.0
	if c.OverlapScoreCreditDecay > 0 {
		excess := float64(active-min(active, in.MinActivePrefillTokens)) / bs
		requestBlocks := float64((isl + uint64(in.BlockSize) - 1) / uint64(in.BlockSize))
		if excess != 0 {
			decay = 1 / (1 + float64(c.OverlapScoreCreditDecay*float64(excess/requestBlocks)))
		}
	}
	credit := float64(float64(c.OverlapScoreCredit*decay) * float64(in.Device))
	credit += float64(c.HostCacheHitWeight * float64(in.HostPinned))
	credit += float64(c.DiskCacheHitWeight * float64(in.Disk+in.External)) // Dynamo folds external into disk
	out.OverlapCredit = credit

	adjusted := max(out.RawPrefillBlocks-credit, 0)
	out.Cost = float64(c.PrefillLoadScale*adjusted) + in.DecodeBlocks
	out.Cost += float64(c.DecodeActiveRequestWeight * float64(in.ActiveRequests))
	return out
}

// defaultCost fills the default cost's terms of c. minActive is the
// least active_prefill_tokens among all candidates (for the decay).
func (s *Selector) defaultCost(c *Candidate, isl int, minActive uint64) {
	c.DecodeBlocks = float64(c.Load.DecodeBlocks()) + float64(isl/c.BlockSize)
	if c.VirtualBlocks != 0 {
		c.DecodeBlocks += c.VirtualBlocks
	}
	t := s.cfg.DefaultCost(CostInput{BlockSize: c.BlockSize, ISL: isl,
		Device: c.Overlap, HostPinned: c.HostPinned, Disk: c.Disk, External: c.External,
		ActivePrefillTokens: c.Load.PrefillTokens(), MinActivePrefillTokens: minActive,
		DecodeBlocks: c.DecodeBlocks}) // ActiveRequests: not reported, 0
	c.PrefillBlocks, c.OverlapCredit, c.Logit = t.RawPrefillBlocks, t.OverlapCredit, t.Cost
}
