package index

import (
	"errors"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// radixTree is the baseline of the stored-block benchmarks: Dynamo's
// first KV index (lib/kv-router radix_tree.rs, RadixTree::apply_event)
// redone in Go, one map per node, for the same events in the same run.
// Each node keeps its children by local hash and the set of workers
// holding it; each worker keeps a map from its external hashes to nodes,
// to find parents and removed blocks. Only what the benchmark applies is
// here: stored and removed events.
type radixTree struct {
	root   *radixNode
	lookup map[kvevents.WorkerKey]map[uint64]*radixNode
}

type radixNode struct {
	children map[uint64]*radixNode // by local hash
	workers  map[kvevents.WorkerKey]struct{}
	hash     uint64 // external hash
}

func newRadixTree() *radixTree {
	return &radixTree{root: newRadixNode(0), lookup: map[kvevents.WorkerKey]map[uint64]*radixNode{}}
}

func newRadixNode(hash uint64) *radixNode {
	return &radixNode{children: map[uint64]*radixNode{}, workers: map[kvevents.WorkerKey]struct{}{}, hash: hash}
}

var errRadixParent = errors.New("radix baseline: parent block not found")

func (t *radixTree) apply(ev *kvevents.Event) error {
	lookup := t.lookup[ev.Worker]
	if lookup == nil {
		lookup = map[uint64]*radixNode{}
		t.lookup[ev.Worker] = lookup
	}
	switch ev.Kind {
	case schemas.KindStored:
		cur := t.root
		if ev.ParentHash != nil {
			if cur = lookup[*ev.ParentHash]; cur == nil {
				return errRadixParent
			}
		}
		for _, b := range ev.Blocks {
			child := cur.children[b.LocalHash]
			if child == nil {
				if child = lookup[b.ExternalHash]; child == nil {
					child = newRadixNode(b.ExternalHash)
				}
				cur.children[b.LocalHash] = child
			}
			child.workers[ev.Worker] = struct{}{}
			lookup[b.ExternalHash] = child
			cur = child
		}
	case schemas.KindRemoved:
		for _, h := range ev.Removed {
			n := lookup[h]
			if n == nil {
				continue
			}
			delete(n.workers, ev.Worker)
			if len(n.workers) == 0 {
				clear(n.children) // no worker holds its descendants either
			}
			delete(lookup, h)
		}
	}
	return nil
}

func (t *radixTree) entries() int {
	n := 0
	for _, m := range t.lookup {
		n += len(m)
	}
	return n
}
