package workload

import (
	"fmt"
	"slices"
	"time"
)

// TraceOptions configure ReadTrace.
type TraceOptions struct {
	// Skip drops the first Skip requests; Limit keeps the next Limit (0:
	// all). A turn whose previous turn was skipped starts a conversation.
	Skip, Limit int
	// BlockSize of the hash_ids; default 512 (Mooncake's).
	BlockSize int
	// WakeupLead is how long before a next turn its wake-up comes;
	// default 1s, negative: 0.
	WakeupLead time.Duration
	// Signals announce the next turns of turns whose finish the trace
	// gives (Record.FinishReason).
	Signals Signals
	Service ServiceModel
	Model   string // default DefaultModel
}

func (o TraceOptions) withDefaults() TraceOptions {
	if o.BlockSize <= 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.WakeupLead == 0 {
		o.WakeupLead = time.Second
	}
	o.WakeupLead = max(o.WakeupLead, 0)
	return o
}

// Record is one request of a trace, as a Mooncake line gives it: its time
// (ms), lengths and block ids, and the session it belongs to when the
// trace names one (aiperf's multi-turn traces do).
type Record struct {
	Timestamp                 int64
	InputLength, OutputLength int
	HashIDs                   []uint64
	Session                   string
	// FinishReason is the response's finish_reason when the trace gives
	// it (FinishToolCalls: a tool call); "" when it does not, and the
	// assumed rule decides. Tool names the tool called, when given.
	FinishReason, Tool string
	// Source is where the record came from; a spooled workload keeps it
	// (Workload.Source) in place of HashIDs.
	Source SourceRef
}

// FromRecords builds a workload from trace records in time order (the
// caller checked them, as ReadTrace does; Skip and Limit are not
// applied). A record naming a session follows that session's previous
// record; one without is linked by its ids (see the package
// documentation).
func FromRecords(recs []Record, o TraceOptions) (*Workload, error) {
	o = o.withDefaults()
	w := &Workload{Model: o.Model, BlockSize: o.BlockSize}
	// Requests by their full blocks: a candidate previous turn of any
	// later request whose ids start with them.
	byFull := map[uint64][]int{}
	bySession := map[string]int{}
	var hasNext []bool
	var last int64
	for k, rec := range recs {
		if rec.Timestamp < last {
			return nil, fmt.Errorf("%w: record %d: timestamp %d before the previous %d", ErrInvalid, k, rec.Timestamp, last)
		}
		if err := checkRecord(k, &rec, o.BlockSize); err != nil {
			return nil, err
		}
		last = rec.Timestamp
		req := Request{At: time.Duration(rec.Timestamp) * time.Millisecond, InputLength: rec.InputLength,
			OutputLength: rec.OutputLength, HashIDs: rec.HashIDs, Prev: -1}
		req.FinishKnown, req.ToolCall, req.Tool = rec.facts()
		i := len(w.Requests)
		keys := prefixKeys(req.HashIDs)
		// What the prompts share decides the link, forks included; a
		// session id only fills in when they share too little to tell
		// (a turn that rewrote its context), so a trace and the same
		// traffic read back from the streams link alike.
		req.Prev, req.Fork = findPrev(w, byFull, hasNext, keys, &req)
		if rec.Session != "" {
			if prev, ok := bySession[rec.Session]; ok && req.Prev < 0 {
				req.Prev = prev
			}
			bySession[rec.Session] = i
		}
		if req.Prev >= 0 {
			hasNext[req.Prev] = true
		}
		w.Requests = append(w.Requests, req)
		hasNext = append(hasNext, false)
		if full := req.InputLength / o.BlockSize; full > 0 {
			byFull[keys[full-1]] = append(byFull[keys[full-1]], i)
		}
	}
	if err := w.finish(o.Service, o.WakeupLead, o.Signals, true); err != nil {
		return nil, err
	}
	return w, nil
}

// facts are what rec says of its response: whether it is known to end
// in a tool call (FinishReason given), whether it does, and the tool (a
// tool named without a finish_reason is a tool call).
func (rec *Record) facts() (known, toolCall bool, tool string) {
	known = rec.FinishReason != "" || rec.Tool != ""
	toolCall = rec.FinishReason == FinishToolCalls || (rec.FinishReason == "" && rec.Tool != "")
	if toolCall {
		tool = rec.Tool
	}
	return known, toolCall, tool
}

// findPrev returns the request r is the next turn of, or -1: the longest
// earlier full-block prefix of r's ids, of at least MinLinkBlocks blocks,
// whose request r can follow (see the package documentation), the latest
// such one without a next turn, else the latest with one (then r is a
// fork: fork true). A link through fewer blocks would join requests that
// merely share what most requests share (a system prompt).
// keys[l-1] is the key of r's first l ids.
func findPrev(w *Workload, byFull map[uint64][]int, hasNext []bool, keys []uint64, r *Request) (prev int, fork bool) {
	for l := len(r.HashIDs); l >= MinLinkBlocks; l-- {
		cands := byFull[keys[l-1]]
		fork := -1
		for k := len(cands) - 1; k >= 0; k-- {
			e := &w.Requests[cands[k]]
			if e.InputLength/w.BlockSize != l || !slices.Equal(e.HashIDs[:l], r.HashIDs[:l]) {
				continue // a key collision
			}
			if r.InputLength < e.InputLength+e.OutputLength {
				continue
			}
			if !hasNext[cands[k]] {
				return cands[k], false
			}
			if fork < 0 {
				fork = cands[k]
			}
		}
		if fork >= 0 {
			return fork, true
		}
	}
	return -1, false
}

// prefixKeys returns a key for every prefix of ids (keys[l-1] for the
// first l); equal prefixes give equal keys, and candidates are checked
// id by id, so collisions cost time, not correctness.
func prefixKeys(ids []uint64) []uint64 {
	return appendPrefixKeys(make([]uint64, 0, len(ids)), ids)
}

// appendPrefixKeys appends prefixKeys(ids) to dst.
func appendPrefixKeys(dst, ids []uint64) []uint64 {
	var k uint64 = 0x9e3779b97f4a7c15
	for _, id := range ids {
		k ^= id + 0x9e3779b97f4a7c15 + k<<6 + k>>2
		k *= 0xbf58476d1ce4e5b9
		dst = append(dst, k)
	}
	return dst
}

// checkRecord rejects record k when its lengths are negative (a response
// would come before its request) or its ids cannot hold its full blocks
// (the link would have no key to file it under).
func checkRecord(k int, rec *Record, blockSize int) error {
	switch {
	case rec.InputLength < 0 || rec.OutputLength < 0:
		return fmt.Errorf("%w: record %d: negative length", ErrInvalid, k)
	case len(rec.HashIDs) < rec.InputLength/blockSize:
		return fmt.Errorf("%w: record %d: %d hash_ids cannot hold %d tokens", ErrInvalid, k, len(rec.HashIDs), rec.InputLength)
	}
	return nil
}
