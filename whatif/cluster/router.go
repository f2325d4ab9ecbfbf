package cluster

import (
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// Router is the router model: hintstream's own routing.Selector fed with
// the simulator's exact device caches (not an index built from events)
// and its current loads. Real requests are routed with it, so a prefetch
// is accurate exactly when hintstream's choice, made from the bus, is the
// one this exact view makes when the request arrives.
type Router struct {
	sel     *routing.Selector
	loads   *routing.LoadTable
	records []schemas.WorkerRecord
	caches  []*DeviceCache
}

// NewRouter routes among records, whose caches[i] belongs to records[i]
// (dp rank 0 only), with cfg (routing.DefaultConfig() for the router
// hintstream models); it fails for a cfg the selector cannot use.
func NewRouter(records []schemas.WorkerRecord, caches []*DeviceCache, cfg routing.Config) (*Router, error) {
	r := &Router{loads: routing.NewLoadTable(), records: records, caches: caches}
	var err error
	if r.sel, err = routing.NewSelector(r, r, r.loads, routing.WithConfig(cfg)); err != nil {
		return nil, err
	}
	return r, nil
}

// Workers implements routing.Workers.
func (r *Router) Workers() []schemas.WorkerRecord { return r.records }

// Overlap implements routing.Overlapper over the exact caches.
func (r *Router) Overlap(seq []uint64) map[kvevents.WorkerKey]int {
	out := make(map[kvevents.WorkerKey]int, len(r.caches))
	for i, c := range r.caches {
		if n := c.Prefix(seq); n > 0 {
			out[kvevents.WorkerKey{WorkerID: r.records[i].WorkerID}] = n
		}
	}
	return out
}

// SetLoad records worker i's current load.
func (r *Router) SetLoad(l schemas.ActiveLoad) { r.loads.Update(l) }

// Route returns the index of the worker the prompt goes to and the
// chosen candidate.
func (r *Router) Route(model string, tokens []uint32) (int, routing.Candidate, error) {
	return r.route(&schemas.RequestEvent{Model: model, TokenIDs: tokens})
}

// RouteHashes is Route for a prompt of n tokens known by its sequence
// hashes seq at blockSize (kvevents.PromptHashes of its tokens): the
// same choice as Route's when every worker's blocks are blockSize.
func (r *Router) RouteHashes(model string, seq []uint64, blockSize, n int) (int, routing.Candidate, error) {
	return r.route(&schemas.RequestEvent{Model: model, SequenceHashes: seq, SequenceBlockSize: uint32(blockSize), PromptTokens: uint32(n)})
}

func (r *Router) route(req *schemas.RequestEvent) (int, routing.Candidate, error) {
	c, err := r.sel.Select(req)
	if err != nil {
		return -1, c, err
	}
	for i, rec := range r.records {
		if rec.WorkerID == c.Worker.WorkerID {
			return i, c, nil
		}
	}
	return -1, c, routing.ErrNoWorker
}
