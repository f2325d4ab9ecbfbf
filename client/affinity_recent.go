package client

import (
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// Affinity records that stay true. A session's record names the worker
// its last wake-up's prefetch went to; three things made it false:
//
//   - a session whose turns overlap (its next wake-up arrives before the
//     turn of the last) or that forks had its record replaced by the
//     newer wake-up's, so the earlier turn found another wake-up's worker
//     and went unpinned (or to a worker its own prefetch never reached).
//     The writer now keeps each session's unexpired earlier wake-ups in
//     the record (AffinityRecord.Recent, newest first), and a frontend
//     asks for the worker of the turn's own wake-up
//     (client.Affinity.PreferredWorkerFor);
//   - a prefetch the sender never delivered (peer down, expired,
//     refused) left its record: hints' engine now hands the record over
//     only from the hint's Sent hook, once ZMQ took it for a connected
//     peer, so an undelivered prefetch writes none. WithdrawAffinity
//     remains for a caller that records at queue time: it takes a
//     record back (the previous unexpired wake-up, if any, becomes the
//     record again; otherwise an expired record replaces it);
//   - records lingered DefaultAffinityLinger in a batch even when the
//     writer was idle, so a turn within 10 ms of its wake-up found none:
//     an idle writer now publishes at once and lingers only while
//     records keep coming (affinity_batch.go), and a frontend may wait a
//     few milliseconds for its wake-up's record
//     (client.Affinity.AwaitPreferred).
//
// The state is the writer goroutine's own (no lock) and bounded: at most
// DefaultAffinitySessions sessions, oldest first out, entries dropped as
// they expire. Members of a group each know the wake-ups they decided; a
// session whose overlapping wake-ups went to different members keeps
// only the last writer's list.

// DefaultAffinitySessions bounds the sessions whose recent wake-ups a
// writer remembers (~200 bytes each).
const DefaultAffinitySessions = 65536

type affinityState struct {
	by   map[string]*schemas.AffinityRecord // key -> the record last written
	ring []string                           // keys, oldest first out
	next int
	now  func() time.Time
}

func newAffinityState(n int) *affinityState {
	return &affinityState{by: make(map[string]*schemas.AffinityRecord), ring: make([]string, n), now: time.Now}
}

func (s *affinityState) remember(key string, rec *schemas.AffinityRecord) {
	if _, ok := s.by[key]; !ok {
		if old := s.ring[s.next]; old != "" {
			delete(s.by, old)
		}
		s.ring[s.next] = key
		s.next = (s.next + 1) % len(s.ring)
	}
	s.by[key] = rec
}

// prepare turns a queued put into the record to write; false: nothing to
// write (a withdrawal of a record already replaced or expired).
func (s *affinityState) prepare(p *affinityPut) bool {
	now := s.now().UnixMilli()
	prev := s.by[p.key]
	if p.withdraw {
		return s.withdraw(p, prev, now)
	}
	rec := p.rec
	rec.Recent = nil
	if prev != nil {
		if prev.ExpiresAtMs > now && prev.RequestID != rec.RequestID && len(prev.RequestID) <= schemas.MaxAffinityRecentID {
			rec.Recent = append(rec.Recent, schemas.AffinityEntry{WorkerID: prev.WorkerID, DpRank: prev.DpRank,
				ExpiresAtMs: prev.ExpiresAtMs, RequestID: prev.RequestID})
		}
		for _, e := range prev.Recent {
			if len(rec.Recent) == schemas.MaxAffinityRecent {
				break
			}
			if e.ExpiresAtMs > now && e.RequestID != rec.RequestID {
				rec.Recent = append(rec.Recent, e)
			}
		}
	}
	s.remember(p.key, &rec)
	p.rec = rec
	return true
}

func (s *affinityState) withdraw(p *affinityPut, prev *schemas.AffinityRecord, now int64) bool {
	if prev == nil {
		return false
	}
	id := p.rec.RequestID
	if prev.RequestID != id {
		kept := prev.Recent[:0:0]
		for _, e := range prev.Recent {
			if e.RequestID != id {
				kept = append(kept, e)
			}
		}
		if len(kept) == len(prev.Recent) {
			return false // not in the record (already gone)
		}
		rec := *prev
		rec.Recent = kept
		s.remember(p.key, &rec)
		p.rec = rec
		return true
	}
	// The record itself: the newest unexpired earlier wake-up takes its
	// place, or an expired record (no preference) does.
	var rec schemas.AffinityRecord
	for i, e := range prev.Recent {
		if e.ExpiresAtMs > now {
			rec = schemas.AffinityRecord{WorkerID: e.WorkerID, DpRank: e.DpRank, ExpiresAtMs: e.ExpiresAtMs,
				RequestID: e.RequestID, Recent: append([]schemas.AffinityEntry(nil), prev.Recent[i+1:]...)}
			break
		}
	}
	if rec.WorkerID == 0 {
		rec = schemas.AffinityRecord{WorkerID: prev.WorkerID, DpRank: prev.DpRank, ExpiresAtMs: 1, RequestID: id}
	}
	s.remember(p.key, &rec)
	p.rec = rec
	return true
}

// WithdrawAffinity takes back the record queued for session's wake-up
// requestID, whose prefetch was dropped before it left. It returns at
// once, as RecordAffinity does.
func (w *AffinityWriter) WithdrawAffinity(session, requestID string) {
	key := schemas.AffinityKey(session)
	if key == "" {
		return
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return
	}
	select {
	case w.queue <- affinityPut{key: key, rec: schemas.AffinityRecord{RequestID: requestID}, withdraw: true}:
	default:
		w.counts.AffinityDropped("queue_full", 1)
	}
}
