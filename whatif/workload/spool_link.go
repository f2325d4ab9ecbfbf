package workload

import (
	"bufio"
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"time"
)

// link is Spool's first pass: FromRecords' linking, record by record. It
// appends each request, links it to its previous turn by findPrev's
// rules (or its named session's latest request), and patches on disk
// what the link changes in earlier requests: the previous turn's Next
// (its first continuation only) and the conversation's latest request,
// kept on its first one.
func (s *spool) link(next func() (Record, error), blockSize int, keys1 func(dst, ids []uint64) []uint64) error {
	l := linker{s: s, bs: int64(blockSize), byFull: map[uint64]*prefixEntry{}, bySession: map[string]int64{}, keyFunc: keys1}
	for k := 0; ; k++ {
		rec, err := next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := l.add(k, &rec); err != nil {
			return err
		}
		s.n++
		s.stats.prefixes = max(s.stats.prefixes, len(l.byFull))
		s.stats.sessions = max(s.stats.sessions, len(l.bySession))
	}
}

// linker is what linking keeps in memory: one entry per distinct
// full-block prefix and per named session, and buffers reused across
// records.
type linker struct {
	s  *spool
	bs int64
	// byFull maps a full-block prefix's key to its requests: the latest,
	// earlier ones chained through spoolRec.chainPrev.
	byFull    map[uint64]*prefixEntry
	bySession map[string]int64
	last      int64
	// keys1 and keys2 are the record's prefix keys (keyFunc, which is
	// appendPrefixKeys, and appendPrefixKeys2), reused.
	keyFunc      func(dst, ids []uint64) []uint64
	keys1, keys2 []uint64
	cand         spoolRec // the candidate findPrev read last
}

// prefixEntry is what the linker keeps per distinct full-block prefix
// key. free and minNeed let findPrev skip a chain, or stop early, where
// reading every candidate could only lead to the same answer: without
// them a prompt sent again and again (or a turn forked again and again)
// would read back every earlier copy each time.
type prefixEntry struct {
	latest int64
	// free counts the chain's requests with no next turn yet.
	free int64
	// minNeed is the least input+output of the chain's requests: a
	// request with less input follows none of them.
	minNeed int64
}

func (l *linker) add(k int, rec *Record) error {
	if rec.Timestamp < l.last {
		return fmt.Errorf("%w: record %d: timestamp %d before the previous %d", ErrInvalid, k, rec.Timestamp, l.last)
	}
	if err := checkRecord(k, rec, int(l.bs)); err != nil {
		return err
	}
	l.last = rec.Timestamp
	i := int64(k)
	r := spoolRec{at: int64(time.Duration(rec.Timestamp) * time.Millisecond), in: int64(rec.InputLength),
		out: int64(rec.OutputLength), prev: -1, next: -1, chainPrev: -1, root: i, last: i, src: rec.Source}
	var tool string
	r.finishKnown, r.toolCall, tool = rec.facts()
	r.tool = l.s.toolID(tool)
	l.s.anyKnown = l.s.anyKnown || r.finishKnown
	l.keys1 = l.keyFunc(l.keys1[:0], rec.HashIDs)
	l.keys2 = appendPrefixKeys2(l.keys2[:0], rec.HashIDs)
	prev, fork, err := l.findPrev(&r)
	if err != nil {
		return err
	}
	if rec.Session != "" {
		if p, ok := l.bySession[rec.Session]; ok && prev < 0 {
			prev = p
		}
		l.bySession[rec.Session] = i
	}
	r.prev, r.fork = prev, fork
	if prev >= 0 {
		var p spoolRec
		if err := l.s.readRec(prev, &p); err != nil {
			return err
		}
		if p.next < 0 {
			if err := l.s.patch(prev, offNext, i); err != nil {
				return err
			}
			if e := l.byFull[p.key1]; e != nil && p.in/l.bs > 0 {
				e.free--
			}
		}
		r.root, r.turn = p.root, p.turn+1
		if err := l.s.patch(r.root, offLast, i); err != nil {
			return err
		}
	}
	if full := r.in / l.bs; full > 0 {
		r.key1, r.key2 = l.keys1[full-1], l.keys2[full-1]
		e, ok := l.byFull[r.key1]
		if !ok {
			e = &prefixEntry{latest: -1, minNeed: r.in + r.out}
			l.byFull[r.key1] = e
		}
		r.chainPrev, e.latest = e.latest, i
		e.free++
		e.minNeed = min(e.minNeed, r.in+r.out)
	}
	return l.s.writeRec(i, &r)
}

// findPrev is findPrev (trace.go) over the requests on disk: for the
// longest prefix first, the candidates with it from the latest back, the
// first that r can follow and that has no next turn yet, else the latest
// that r can follow (a fork).
func (l *linker) findPrev(r *spoolRec) (prev int64, fork bool, err error) {
	for n := len(l.keys1); n >= MinLinkBlocks; n-- {
		forkOf := int64(-1)
		p, ok := l.byFull[l.keys1[n-1]]
		if !ok || r.in < p.minNeed {
			continue // no request with this prefix is short enough
		}
		for c := p.latest; c >= 0; c = l.cand.chainPrev {
			if err := l.s.readRec(c, &l.cand); err != nil {
				return -1, false, err
			}
			l.s.stats.candidates++
			e := &l.cand
			if e.in/l.bs != int64(n) || e.key2 != l.keys2[n-1] {
				continue // a key collision
			}
			if r.in < e.in+e.out {
				continue
			}
			if e.next < 0 {
				return c, false, nil
			}
			if forkOf < 0 {
				forkOf = c
				if p.free == 0 {
					break // none has no next turn: the latest is the one
				}
			}
		}
		if forkOf >= 0 {
			return forkOf, true, nil
		}
	}
	return -1, false, nil
}

// finish is Spool's second pass: finish (workload.go) request by
// request. Each request's response is timed against its next turn
// (read back), its wake-up against its previous turn's response
// (written back earlier in this pass), and its events go through a heap
// that lets an event out once no later request can make an earlier one.
func (s *spool) finish(svc ServiceModel, lead time.Duration, sig Signals) error {
	s.toolIDs = nil
	ew := bufio.NewWriterSize(s.evs, 64<<10)
	var pend eventHeap
	var b [evSize]byte
	emit := func(e Event) error {
		encodeEvent(b[:], e)
		if _, err := ew.Write(b[:]); err != nil {
			return fmt.Errorf("workload: spool: writing events: %w", err)
		}
		s.nEvents++
		return nil
	}
	g := newSignaller(sig, lead)
	maxLead := int64(lead)
	if s.anyKnown {
		maxLead = int64(sig.withDefaults().maxLead(lead))
	}
	var r, p spoolRec
	for i := int64(0); i < int64(s.n); i++ {
		if err := s.readRec(i, &r); err != nil {
			return err
		}
		r.responseAt = r.at + int64(svc.Time(int(r.in), int(r.out)))
		if !r.finishKnown {
			r.toolCall = false
		}
		r.toolTime = 0
		if r.next >= 0 {
			nextAt, err := s.field(r.next, offAt)
			if err != nil {
				return err
			}
			r.responseAt = min(r.responseAt, nextAt)
			if !r.finishKnown {
				r.toolCall = true
			}
			if r.toolCall {
				r.toolTime = nextAt - r.responseAt
			}
		}
		r.hasWakeup, r.wakeupAt, r.signal = false, 0, sigNone
		if r.prev >= 0 {
			if err := s.readRec(r.prev, &p); err != nil {
				return err
			}
			if p.finishKnown && p.toolCall && p.next == i {
				g.observe(s.toolName(p.tool), time.Duration(r.at-p.responseAt))
			}
			at, kind := g.wakeup(int(i), time.Duration(r.at), prevFacts{known: p.finishKnown, toolCall: p.toolCall,
				responseAt: time.Duration(p.responseAt), predicted: time.Duration(p.predicted), tokens: int(p.in + p.out)})
			r.signal = kind
			if kind != sigNone {
				r.hasWakeup, r.wakeupAt = true, int64(at)
			}
		}
		r.predicted = 0
		if r.finishKnown && r.toolCall && r.next >= 0 {
			r.predicted = int64(g.predict(s.toolName(r.tool)))
		}
		if err := s.writeRec(i, &r); err != nil {
			return err
		}
		heap.Push(&pend, Event{At: time.Duration(r.at), Kind: KindRequest, Request: int(i)})
		heap.Push(&pend, Event{At: time.Duration(r.responseAt), Kind: KindResponse, Request: int(i)})
		if r.hasWakeup {
			heap.Push(&pend, Event{At: time.Duration(r.wakeupAt), Kind: KindWakeup, Request: int(i)})
		}
		s.stats.pending = max(s.stats.pending, len(pend))
		// A later request j has every event at or after At_j − maxLead ≥
		// At_i − maxLead (a response is never before its request, a
		// wake-up never more than maxLead before it), so what is strictly
		// earlier is in its place.
		for len(pend) > 0 && int64(pend[0].At) < r.at-maxLead {
			if err := emit(heap.Pop(&pend).(Event)); err != nil {
				return err
			}
		}
	}
	for len(pend) > 0 {
		if err := emit(heap.Pop(&pend).(Event)); err != nil {
			return err
		}
	}
	if err := ew.Flush(); err != nil {
		return fmt.Errorf("workload: spool: writing events: %w", err)
	}
	return nil
}

// toolName is the name of tool index id, ToolName when unnamed.
func (s *spool) toolName(id uint32) string {
	if id > 0 && int(id) < len(s.tools) {
		return s.tools[id]
	}
	return ToolName
}

// eventHeap orders events as finish sorts them: by time, then kind,
// then request.
type eventHeap []Event

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(a, b int) bool {
	return cmp.Or(cmp.Compare(h[a].At, h[b].At), cmp.Compare(h[a].Kind, h[b].Kind),
		cmp.Compare(h[a].Request, h[b].Request)) < 0
}
func (h eventHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(Event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
