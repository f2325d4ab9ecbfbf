package agents

import (
	"container/list"
	"slices"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// Hints the engine makes on its own, outside the agent programs: the
// wake-up prefetches and the tool-call pins, which it hears as an
// engine observer (Observer). Their outcomes are told as the agents'
// are, from the session's next request and its response.
const (
	KindWakeupPrefetch = "wakeup_prefetch"
	KindToolCallPin    = "tool_call_pin"
)

// session is what is pending of the engine's hints for one session.
type session struct {
	key           string
	turnReq       string // the request that came after the prefetch
	prefetch, pin *pending
	elem          *list.Element
}

// Sessions is how many sessions have engine hints pending; at most
// Config.MaxPrograms.
func (t *Tracker) Sessions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// session returns (and touches) key's pending hints, creating them; the
// least recently seen session is forgotten past MaxPrograms. Under t.mu.
func (t *Tracker) session(key string) *session {
	if s := t.sessions[key]; s != nil {
		t.slru.MoveToFront(s.elem)
		return s
	}
	if len(t.sessions) >= t.cfg.MaxPrograms {
		t.forgetSession(t.slru.Back().Value.(*session))
		t.evicted.Sessions++
	}
	s := &session{key: key}
	s.elem = t.slru.PushFront(s)
	t.sessions[key] = s
	return s
}

// forgetSession drops s, settling what it still had pending as forget
// does for a program. Under t.mu.
func (t *Tracker) forgetSession(s *session) {
	if s.pin != nil {
		t.decide(s.pin, OutcomeReleased)
	}
	if s.prefetch != nil {
		t.decide(s.prefetch, OutcomeExpired)
	}
	if s.turnReq != "" && t.sessByReq[s.turnReq] == s {
		delete(t.sessByReq, s.turnReq)
	}
	delete(t.sessions, s.key)
	t.slru.Remove(s.elem)
}

// Prefetched follows a wake-up prefetch of req's session to worker.
func (t *Tracker) Prefetched(req *schemas.RequestEvent, worker uint64, dpRank uint32, expires time.Time) {
	if req.SessionID == "" {
		return // no next request can be told to be its session's
	}
	now := t.now()
	// req is the engine's, reused once this returns: the tokens are copied.
	q := &schemas.RequestEvent{RequestID: req.RequestID, SessionID: req.SessionID, Model: req.Model,
		TokenIDs: slices.Clone(req.TokenIDs), LoraName: req.LoraName, CacheSalt: req.CacheSalt}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(req.SessionID)
	if s.prefetch != nil { // superseded before it was used
		t.decide(s.prefetch, OutcomeExpired)
	}
	s.prefetch = &pending{prefetchQ: q, rec: Record{Hint: "prefetch", Kind: KindWakeupPrefetch, Session: req.SessionID,
		WorkerID: worker, DpRank: dpRank, Tokens: len(q.TokenIDs), SentAt: now, Expires: expires}}
}

// Pinned follows a tool-call pin of session (pins.Observer).
func (t *Tracker) Pinned(key string, worker uint64, dpRank uint32, tokens int, expires time.Time) {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.session(key)
	if s.pin != nil {
		t.decide(s.pin, OutcomeReleased) // its slot now holds this one
	}
	s.pin = &pending{rec: Record{Hint: "pin", Kind: KindToolCallPin, Session: key, WorkerID: worker, DpRank: dpRank,
		Tokens: tokens, SentAt: now, Expires: expires}}
}

// Renewed moves session's pin expiry (pins.Observer).
func (t *Tracker) Renewed(key string, expires time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.sessions[key]; s != nil && s.pin != nil && expires.After(s.pin.rec.Expires) {
		s.pin.rec.Expires = expires
	}
	// A tool_start pin is renewed by the pins as theirs are; its session
	// is the program's unless the request named another.
	if p := t.programs[key]; p != nil && p.pin != nil && expires.After(p.pin.rec.Expires) {
		p.pin.rec.Expires = expires
	}
}

// Turn is a session's next request (Observer): it settles
// the session's pin, and its prefetch once its response tells the worker.
func (t *Tracker) Turn(req *schemas.RequestEvent) {
	if req.SessionID == "" {
		return
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.sessions[req.SessionID]
	if s == nil || s.turnReq == req.RequestID {
		return
	}
	t.slru.MoveToFront(s.elem)
	if pf := s.prefetch; pf != nil && pf.turnAt.IsZero() {
		if now.After(pf.rec.Expires) {
			t.decide(pf, OutcomeExpired)
			s.prefetch = nil
		} else {
			pf.turnAt = now
			pf.loaded = t.h.DeviceBlocks(pf.prefetchQ, pf.rec.WorkerID, pf.rec.DpRank) > 0
			pf.prefetchQ = nil
			s.turnReq = req.RequestID
			t.sessByReq[req.RequestID] = s
			// The response may have been consumed first.
			if resp := t.early[req.RequestID]; resp != nil {
				if req.NvExt.Context() == nil {
					delete(t.early, req.RequestID) // no program waits for it
				}
				t.served(resp)
			}
		}
	}
	if pn := s.pin; pn != nil {
		if now.After(pn.rec.Expires) {
			t.decide(pn, OutcomeLapsed)
		} else {
			t.decide(pn, OutcomeKept)
			t.m.TokensSaved.Add(uint64(pn.rec.Tokens))
		}
		s.pin = nil
	}
	if s.pin == nil && s.prefetch == nil {
		t.forgetSession(s)
	}
}

// served settles the prefetch of the session whose next request resp
// answers; it reports whether resp was such a response. Under t.mu.
func (t *Tracker) served(resp *schemas.ResponseEvent) bool {
	s := t.sessByReq[resp.RequestID]
	if s == nil {
		return false
	}
	delete(t.sessByReq, resp.RequestID)
	s.turnReq = ""
	if pf := s.prefetch; pf != nil {
		switch {
		case !pf.loaded:
			t.decide(pf, OutcomeNotLoaded)
		case resp.WorkerID == pf.rec.WorkerID && resp.DpRank == pf.rec.DpRank:
			t.decide(pf, OutcomeUsed)
			t.m.TokensSaved.Add(uint64(pf.rec.Tokens))
		default:
			t.decide(pf, OutcomeWrongWorker)
		}
		s.prefetch = nil
	}
	if s.pin == nil {
		t.forgetSession(s)
	}
	return true
}

// tickSessions settles the engine's hints whose time ran out with no
// turn. Under t.mu.
func (t *Tracker) tickSessions(now time.Time) {
	for _, s := range t.sessions {
		if pf := s.prefetch; pf != nil && pf.turnAt.IsZero() && now.After(pf.rec.Expires) {
			t.decide(pf, OutcomeExpired)
			s.prefetch = nil
		}
		if pn := s.pin; pn != nil && now.After(pn.rec.Expires) {
			t.decide(pn, OutcomeLapsed)
			s.pin = nil
		}
		if s.pin == nil && s.prefetch == nil {
			t.forgetSession(s)
		}
	}
}
