package pins

import (
	"context"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// PageLookup names a worker's stored blocks for a prompt's sequence
// hashes by the engine hashes its KV events gave (index.Memory.Pages).
type PageLookup interface {
	Pages(k kvevents.WorkerKey, seqHashes []uint64) []uint64
}

// HashesUnusable says why sequence hashes seeded by scheme cannot be a
// request's blocks on the workers, or "" when they can: keyed tracking
// hashes never match KV events, and unsalted ones do not for a request
// with a LoRA adapter or a cache_salt (its blocks are seeded by them).
// An unsalted chain of such a request would find another request's
// pages of the same tokens: it is counted, never pinned.
func HashesUnusable(scheme, loraName, cacheSalt string) string {
	switch scheme {
	case schemas.HashSchemeKeyed:
		return metrics.HashesKeyed
	case schemas.HashSchemeUnsalted:
		if loraName != "" || cacheSalt != "" {
			return metrics.HashesUnsalted
		}
	}
	return ""
}

// pinByHashes pins a tool call's prompt known by its sequence hashes
// (Dynamo's request_end): the pages are those the serving worker's KV
// events reported for the hashes, named by their engine block hashes;
// nothing is recomputed from tokens and the request is not read back.
// The response's output is not pinned: no hashes name it.
func (p *Pinning) pinByHashes(ctx context.Context, resp *schemas.ResponseEvent, e IndexEntry, a Arrival) (bool, error) {
	w, ok := p.Workers.Get(resp.WorkerID)
	if !ok {
		p.skip("unknown_worker", resp)
		return false, nil
	}
	if r := HashesUnusable(resp.SequenceHashScheme, resp.LoraName, resp.CacheSalt); r != "" {
		p.skip(r, resp)
		return false, nil
	}
	if p.Endpoint == "" {
		return false, nil
	}
	// Hashes at another block size than the worker's name none of its
	// blocks.
	var pages []uint64
	if p.Pages != nil && w.KvBlockSize == resp.SequenceBlockSize {
		pages = p.Pages.Pages(kvevents.WorkerKey{WorkerID: resp.WorkerID, DpRank: resp.DpRank}, resp.SequenceHashes)
	}
	if len(pages) == 0 {
		p.skip("no_pages", resp)
		return false, nil
	}
	limit := p.MaxPinKeys
	if limit <= 0 {
		limit = actions.DefaultMaxPinKeys
	}
	if len(pages) > limit {
		p.Counters.PinsCut.Inc()
		pages = pages[:limit]
	}
	return p.pin(ctx, resp, nil, e, a, actions.Pin{BlockHashes: pages, WorkerID: resp.WorkerID,
		Tokens: len(pages) * int(resp.SequenceBlockSize)})
}
