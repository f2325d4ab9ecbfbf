// Package routing chooses the worker a prompt would be routed to, as a
// KV-aware router would, without admitting the request or booking load.
package routing

import (
	"errors"

	"github.com/hintstream/hintstream/kvevents"
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

// Candidate is one (worker, dp rank) considered for a prompt.
type Candidate struct {
	Worker    kvevents.WorkerKey
	Endpoint  string // the dp rank's hint endpoint
	BlockSize int
	// Overlap is the number of leading prompt blocks cached on the device.
	Overlap int
	Load    schemas.ActiveLoad
}

// Selector picks the worker with the longest cached prefix.
//
// Order: longest device-tier overlap (in blocks of the worker's own block
// size); then lowest active_decode_blocks; then lowest
// active_prefill_tokens; then lowest kv_used_blocks; then lowest worker id
// and dp rank, so that equal candidates always give the same answer on
// every instance and in replay. A worker without load reports counts as
// idle.
type Selector struct {
	workers Workers
	index   Overlapper
	loads   *LoadTable
}

// NewSelector returns a Selector over a registry, an index and loads.
func NewSelector(w Workers, ix Overlapper, loads *LoadTable) *Selector {
	return &Selector{workers: w, index: ix, loads: loads}
}

// Candidates lists every (worker, dp rank) that serves the request's
// model (every worker when the request names none), with its overlap and
// load, in registry order.
func (s *Selector) Candidates(req *schemas.RequestEvent) []Candidate {
	var out []Candidate
	overlaps := map[uint32]map[kvevents.WorkerKey]int{} // per block size
	for _, w := range s.workers.Workers() {
		if req.Model != "" && w.Model != "" && w.Model != req.Model {
			continue
		}
		ov, ok := overlaps[w.KvBlockSize]
		if !ok {
			ov = s.index.Overlap(kvevents.PromptHashes(req.TokenIDs, int(w.KvBlockSize)))
			overlaps[w.KvBlockSize] = ov
		}
		for rank, ep := range w.HintEndpoints {
			k := kvevents.WorkerKey{WorkerID: w.WorkerID, DpRank: uint32(rank)}
			out = append(out, Candidate{
				Worker:    k,
				Endpoint:  ep,
				BlockSize: int(w.KvBlockSize),
				Overlap:   ov[k],
				Load:      s.loads.Get(k),
			})
		}
	}
	return out
}

// Select returns the best candidate, or ErrNoWorker.
func (s *Selector) Select(req *schemas.RequestEvent) (Candidate, error) {
	cands := s.Candidates(req)
	if len(cands) == 0 {
		return Candidate{}, ErrNoWorker
	}
	best := cands[0]
	for _, c := range cands[1:] {
		if better(c, best) {
			best = c
		}
	}
	return best, nil
}

func better(a, b Candidate) bool {
	if a.Overlap != b.Overlap {
		return a.Overlap > b.Overlap
	}
	for _, p := range [][2]uint64{
		{a.Load.DecodeBlocks(), b.Load.DecodeBlocks()},
		{a.Load.PrefillTokens(), b.Load.PrefillTokens()},
		{a.Load.UsedBlocks(), b.Load.UsedBlocks()},
		{a.Worker.WorkerID, b.Worker.WorkerID},
		{uint64(a.Worker.DpRank), uint64(b.Worker.DpRank)},
	} {
		if p[0] != p[1] {
			return p[0] < p[1]
		}
	}
	return false
}
