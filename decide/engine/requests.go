package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
)

// DecodeRequest decodes a request event within lim and merges the hint
// headers sent as NATS message headers into its headers map (the body
// wins, see headers.go); odd says a header looked like a hint header but
// was not one. Its errors match schemas.ErrMalformed.
func DecodeRequest(lim schemas.Limits, m Message) (req *schemas.RequestEvent, odd bool, err error) {
	req = new(schemas.RequestEvent)
	if odd, err = decodeRequestInto(lim, m, req); err != nil {
		return nil, false, err
	}
	return req, odd, nil
}

// decodeRequestInto is DecodeRequest into req (schemas.DecodeRequestInto).
func decodeRequestInto(lim schemas.Limits, m Message, req *schemas.RequestEvent) (odd bool, err error) {
	if err := lim.CheckHeaders("request", m.Header); err != nil {
		return false, err
	}
	if err := lim.DecodeRequestInto(req, m.Data, m.Header.Get("Content-Type")); err != nil {
		return false, err
	}
	odd = headerUnrecognised(req.Headers, m.Header)
	mergeNATSHeaders(req, m.Header)
	return odd, nil
}

// Request decodes one request event (DecodeRequest) and decides on it
// (OnRequest); a malformed one is Rejected. The decoded event is reused
// for the next request unless the pins keep it (a turn, with pins on).
// A frame of a KV router's active_sequences_events subject, which the
// request stream captures beside request events
// (--dynamo-active-sequences), is a routing-time start (Routed), so that
// run and replay read that stream alike.
func (e *Engine) Request(ctx context.Context, d Delivery, m Message) Outcome {
	if eventplane.IsActiveSequencesSubject(m.Subject) {
		return e.Routed(ctx, d, m)
	}
	e.counters.RequestsReceived.Inc()
	req := e.requests.get()
	odd, err := decodeRequestInto(e.d.Limits, m, req)
	if err != nil {
		e.requests.put(req)
		return Rejected(err)
	}
	out := e.OnRequest(ctx, d, req, odd)
	// Only the pins keep a request (OnRequest indexes turns, never
	// wake-ups); the affinity record and the hint copied what they use.
	if e.pins == nil || isWakeup(req.Headers) {
		e.requests.put(req)
	}
	return out
}

// OnRequest decides on a decoded request: with pins on, index it and
// release its session's pin; for a wake-up, prefetch. odd says its
// headers looked like hint headers but were not (see headers.go). ctx
// bounds the pins' store operations.
func (e *Engine) OnRequest(ctx context.Context, d Delivery, req *schemas.RequestEvent, odd bool) Outcome {
	wakeup := isWakeup(req.Headers)
	// A wake-up announces a turn, it is not one: it must neither release
	// the session's pin (the real request may land on another worker and
	// need the pinned pages from L3) nor end the tool's observed time early.
	if e.pins != nil && !wakeup {
		err := d.Unknown
		if err == nil {
			err = e.pins.OnRequest(ctx, d.Seq, d.Time, req)
		}
		if err != nil {
			// The index must hold the request before it is acked, or a
			// tool-call response could find nothing to pin.
			e.counters.RequestsTransientErrors.Inc()
			e.log.Warn("request not indexed; will redeliver", "request_id", req.RequestID, "err", err)
			return RetryAfter(time.Second, err)
		}
	}
	if e.pins != nil {
		// After OnRequest: a session's next turn takes its slot before
		// its pin could be renewed.
		e.pins.Tick(ctx, eventTime(d, req.ReceivedAtMs))
	}
	if odd {
		// Not silently plain: the frontend meant something (see headers.go).
		e.counters.RequestsHeaderUnrecognised.Inc()
		e.log.Debug("request header looks like a hint header but is not one",
			"request_id", req.RequestID, "wakeup", wakeup)
	}
	at := eventTime(d, req.ReceivedAtMs)
	if !wakeup {
		if !odd {
			e.counters.RequestsPlain.Inc()
		}
		e.observeRequest(ctx, ObservedRequest{At: at, Event: req})
		return Done()
	}
	e.counters.RequestsWakeup.Inc()
	// Every way the prefetch can end without a hint is counted, none of
	// them is a reason to redeliver. A queued hint is settled by the
	// sender once it has left (or was dropped), so a crash in between
	// redelivers the wake-up.
	cand, expires, queued := e.prefetchTo(d, req)
	o := ObservedRequest{At: at, Event: req, Wakeup: true, Prefetched: queued}
	if queued {
		o.Sent = Sent{WorkerID: cand.Worker.WorkerID, DpRank: cand.Worker.DpRank, Expires: expires}
	}
	e.observeRequest(ctx, o)
	if queued {
		return HeldUntilSent()
	}
	return Done()
}

// eventTime is the time an event stamps itself with (ms), or else its
// stream timestamp (zero when unknown).
func eventTime(d Delivery, ms int64) time.Time {
	if ms > 0 {
		return time.UnixMilli(ms)
	}
	if d.Unknown == nil {
		return d.Time
	}
	return time.Time{}
}

// prefetchTo derives and hands off a prefetch of req's tokens, giving
// the worker chosen and the hint's expiry; false when none was queued.
func (e *Engine) prefetchTo(d Delivery, req *schemas.RequestEvent) (routing.Candidate, time.Time, bool) {
	base := e.now()
	if req.ReceivedAtMs > 0 {
		base = time.UnixMilli(req.ReceivedAtMs)
	} else if d.Unknown == nil {
		base = d.Time
	}
	// A time stamped ahead of our clock (skew, or hostile) must not stretch
	// the hint's life: the sender retries it until its deadline.
	if now := e.now(); base.After(now) {
		base = now
	}
	expires := base.Add(e.d.PrefetchTTL)
	if !e.now().Before(expires) {
		e.counters.HintsPrefetchSkipped.Inc("expired")
		return routing.Candidate{}, time.Time{}, false
	}
	byHashes := len(req.TokenIDs) == 0 && len(req.SequenceHashes) > 0
	if byHashes {
		if r := pins.HashesUnusable(req.SequenceHashScheme, req.LoraName, req.CacheSalt); r != "" {
			e.counters.HintsPrefetchSkipped.Inc(r)
			e.log.Debug("no prefetch: sequence hashes cannot be the workers'", "request_id", req.RequestID, "reason", r)
			return routing.Candidate{}, time.Time{}, false
		}
	}
	cand, reason := e.place(req)
	if reason != "" {
		e.counters.HintsPrefetchSkipped.Inc(reason)
		e.log.Debug("no worker for prefetch", "request_id", req.RequestID, "model", req.Model, "reason", reason,
			"worker_id", req.WorkerID)
		return routing.Candidate{}, time.Time{}, false
	}
	p := actions.Prefetch{
		RequestID: req.RequestID, SessionID: req.SessionID, Model: req.Model,
		TokenIDs: req.TokenIDs, DpRank: cand.Worker.DpRank, ExpiresAt: expires, WorkerID: cand.Worker.WorkerID,
		CacheSalt: req.CacheSalt,
	}
	if byHashes {
		p.SequenceHashes, p.SequenceBlockSize = req.SequenceHashes, req.SequenceBlockSize
		if p.BlockHashes = e.pages(cand.Worker, req.SequenceHashes); len(p.BlockHashes) == 0 {
			// No worker reported a block of the prompt: nothing the
			// worker could be asked to load (also what keyed or random
			// router hashes come to).
			e.counters.HintsPrefetchSkipped.Inc("no_pages")
			return routing.Candidate{}, time.Time{}, false
		}
	}
	body, id, err := actions.AppendPrefetch(e.bodies.get(), p)
	if err != nil {
		e.counters.HintsPrefetchSkipped.Inc("encode")
		e.log.Error("encode prefetch", "request_id", req.RequestID, "err", err)
		return routing.Candidate{}, time.Time{}, false
	}
	err = e.sender.Send(cand.Endpoint, actions.Hint{MessageID: id, Body: body, Deadline: expires,
		Done: d.Settled, Release: e.bodies.release, Sent: e.recordOnSent(req, cand, expires)})
	if err != nil {
		e.bodies.put(body) // not taken: still ours
		e.counters.HintsPrefetchDropped.Inc(actions.DropReason(err))
		e.log.Warn("prefetch not queued", "request_id", req.RequestID, "endpoint", cand.Endpoint, "err", err)
		return routing.Candidate{}, time.Time{}, false
	}
	e.counters.HintsPrefetchQueued.Inc()
	// Checked first: the arguments of a disabled Debug are still boxed,
	// three allocations on every wake-up.
	if e.log.Enabled(context.Background(), slog.LevelDebug) {
		e.log.Debug("prefetch queued", "request_id", req.RequestID, "worker_id", cand.Worker.WorkerID,
			"dp_rank", cand.Worker.DpRank, "overlap_blocks", cand.Overlap, "endpoint", cand.Endpoint)
	}
	return cand, expires, true
}

// recordOnSent is the prefetch's Sent hook: the session's affinity
// record is written once ZMQ took the prefetch for a connected worker,
// not when it was queued, so a preferred worker is one whose prefetch
// was delivered. A prefetch that never leaves (peer down until its
// deadline, aborted) writes nothing and the session keeps its earlier
// record. Nil when records are off, so no closure is made per wake-up.
func (e *Engine) recordOnSent(req *schemas.RequestEvent, cand routing.Candidate, expires time.Time) func() {
	if e.affinity == nil || req.SessionID == "" {
		return nil
	}
	rec, session, to := schemas.AffinityRecord{WorkerID: cand.Worker.WorkerID,
		DpRank: cand.Worker.DpRank, ExpiresAtMs: expires.UnixMilli(), RequestID: req.RequestID}, req.SessionID, e.affinity
	return func() { to.RecordAffinity(session, rec) }
}

// isWakeup reports whether h asks for a wake-up (see wakeupValue).
func isWakeup(h map[string]string) bool {
	v, ok := schemas.LookupHeader(h, schemas.HeaderWakeup)
	if !ok {
		return false
	}
	wake, known := wakeupValue(v)
	return wake && known
}
