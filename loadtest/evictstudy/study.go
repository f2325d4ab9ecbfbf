package evictstudy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// ErrInvalid marks an unusable study input.
var ErrInvalid = errors.New("evictstudy: invalid")

// Key names one page: its position in a prefix tree of block ids, so
// equal keys are equal prefixes.
type Key = int32

// Access is one request as the store sees it: when, and the keys of the
// prompt's full pages in prompt order. Request, Session and Next say
// which request of the workload it is, its conversation, and the
// request that continues it (-1 if none): what a hint could announce.
type Access struct {
	At      time.Duration
	Keys    []Key
	Request int
	Session string
	Next    int
}

// Accesses is a workload's requests at the store, in time order.
type Accesses struct {
	BlockSize int
	List      []Access
	// Keys is the number of distinct pages; Depth[k] is page k's index in
	// its prompts (0 for a prompt's first page) and Parent[k] the page
	// before it (-1 for a first page).
	Keys   int
	Depth  []int32
	Parent []Key
}

// FromWorkload maps w's requests to page accesses: the full blocks of
// each prompt (InputLength ÷ BlockSize of its hash_ids), keyed by their
// prefix.
func FromWorkload(w *workload.Workload) (*Accesses, error) {
	if w.BlockSize <= 0 {
		return nil, fmt.Errorf("%w: block size %d", ErrInvalid, w.BlockSize)
	}
	a := &Accesses{BlockSize: w.BlockSize}
	type edge struct {
		parent Key
		id     uint64
	}
	ids := map[edge]Key{}
	for i := range w.Len() {
		r := w.Req(i)
		full := min(r.InputLength/w.BlockSize, len(r.HashIDs))
		keys := make([]Key, full)
		parent := Key(-1)
		for j := range full {
			e := edge{parent, r.HashIDs[j]}
			k, ok := ids[e]
			if !ok {
				k = Key(len(a.Depth))
				ids[e] = k
				a.Depth = append(a.Depth, int32(j))
				a.Parent = append(a.Parent, parent)
			}
			keys[j] = k
			parent = k
		}
		a.List = append(a.List, Access{At: r.At, Keys: keys, Request: i, Session: r.Session, Next: r.Next})
	}
	if err := w.Err(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(a.List, func(x, y Access) int { return cmp.Compare(x.At, y.At) })
	a.Keys = len(a.Depth)
	return a, nil
}

// Policy is an L3 store under one eviction policy.
type Policy interface {
	// Contains reports whether k is resident, without touching it.
	Contains(k Key) bool
	// Write serves a request's write-through at now: keys are its
	// prompt's pages in order; a resident one is used again, the others
	// are stored (or, under an admission filter, may be turned away).
	Write(now time.Duration, keys []Key)
	// Len is the pages held.
	Len() int
}

// Maker builds a policy of capacity pages for a, and names it.
type Maker struct {
	Name string
	New  func(a *Accesses, capacity int) Policy
}

// Result is one policy's replay.
type Result struct {
	Name string
	// HitPages are the prefix hits in pages; HitTokens the same in tokens.
	HitPages, HitTokens int64
	// MaxLen is the most pages the policy ever held (≤ capacity).
	MaxLen int
}

// Replay plays a under p: per request, the run of resident pages from
// the prompt's first one is its hit, then the prompt is written through.
func Replay(a *Accesses, p Policy, name string) Result {
	r := Result{Name: name}
	for _, acc := range a.List {
		n := 0
		for _, k := range acc.Keys {
			if !p.Contains(k) {
				break
			}
			n++
		}
		r.HitPages += int64(n)
		p.Write(acc.At, acc.Keys)
		r.MaxLen = max(r.MaxLen, p.Len())
	}
	r.HitTokens = r.HitPages * int64(a.BlockSize)
	return r
}

// Run replays a under every maker at capacity pages.
func Run(a *Accesses, capacity int, makers []Maker) ([]Result, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("%w: capacity %d", ErrInvalid, capacity)
	}
	out := make([]Result, 0, len(makers))
	for _, m := range makers {
		out = append(out, Replay(a, m.New(a, capacity), m.Name))
	}
	return out, nil
}
