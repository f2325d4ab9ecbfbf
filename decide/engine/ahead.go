package engine

import (
	"context"
	"encoding/binary"
	"strconv"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/ahead"
	"github.com/hintstream/hintstream/schemas"
)

// Header-free prefetches (package ahead): every turn and response is told
// to the scheduler at its event time, and each event ticks it, so that a
// replay or a simulation sends them in its own time as a live instance
// does in wall time. A due prefetch goes where a wake-up's would: the
// worker the router would pick for the context, with the same envelope,
// and its session's affinity record.

// aheadTurn tells the scheduler of a turn.
func (e *Engine) aheadTurn(at time.Time, req *schemas.RequestEvent) {
	if e.ahead == nil {
		return
	}
	e.ahead.Request(at, ahead.Turn{RequestID: req.RequestID, Session: req.SessionID, Context: contextKey(req),
		Model: req.Model, LoraName: req.LoraName, CacheSalt: req.CacheSalt, Tokens: req.TokenIDs,
		Held: func(worker uint64, tokens []uint32) int { return e.heldOn(req, worker, tokens) }})
}

// heldOn is how many leading tokens of tokens (a header-free prefetch's,
// for a request like req) the index has on worker's device: what its KV
// events say survived until the turn came.
func (e *Engine) heldOn(req *schemas.RequestEvent, worker uint64, tokens []uint32) int {
	_, all, err := e.selector.Choose(&schemas.RequestEvent{RequestID: req.RequestID, Model: req.Model,
		LoraName: req.LoraName, CacheSalt: req.CacheSalt, TokenIDs: tokens})
	if err != nil {
		return 0
	}
	for _, c := range all {
		if c.Worker.WorkerID == worker {
			return c.Overlap * c.BlockSize
		}
	}
	return 0
}

// aheadResponse tells the scheduler of a response: the worker it ran on
// settles a prefetch its turn used, a tool call predicts the next turn
// from the tool class's learned time (pins' learner, when pins are on).
func (e *Engine) aheadResponse(at time.Time, resp *schemas.ResponseEvent) {
	if e.ahead == nil {
		return
	}
	tool := resp.FinishReason == "tool_calls" || len(resp.ToolCalls) > 0
	var expected time.Duration
	if tool && e.pins != nil && e.pins.Learner != nil {
		names := make([]string, 0, len(resp.ToolCalls))
		for _, tc := range resp.ToolCalls {
			names = append(names, tc.Name)
		}
		expected, _ = e.pins.Learner.Expected(names)
	}
	e.ahead.Response(at, resp.RequestID, resp.SessionID, resp.WorkerID, tool, expected)
}

// TickAhead sends the header-free prefetches due at at (the events'
// clock; the service also ticks it with the wall clock between events).
// Nothing when they are off.
func (e *Engine) TickAhead(_ context.Context, at time.Time) {
	if e.ahead == nil {
		return
	}
	for _, p := range e.ahead.Due(at) {
		e.sendAhead(p)
	}
}

// Ahead is the header-free prefetch scheduler, nil when off.
func (e *Engine) Ahead() *ahead.Scheduler { return e.ahead }

func (e *Engine) sendAhead(p ahead.Prefetch) {
	req := &schemas.RequestEvent{RequestID: p.ID, SessionID: p.Session, Model: p.Model, LoraName: p.LoraName,
		CacheSalt: p.CacheSalt, TokenIDs: p.Tokens}
	cand, err := e.selector.Select(req)
	if err != nil {
		e.ahead.Skipped(p, "no_worker")
		return
	}
	if cand.BlockSize > 0 && cand.Overlap >= len(p.Tokens)/cand.BlockSize {
		// Still on the device the turn would go to: nothing to load.
		e.ahead.Skipped(p, "on_device")
		return
	}
	if !e.ahead.Admit(&p, cand.Overlap*cand.BlockSize) {
		return // over the waste budget (counted)
	}
	body, id, err := actions.AppendPrefetch(e.bodies.get(), actions.Prefetch{
		RequestID: p.ID, SessionID: p.Session, Model: p.Model, TokenIDs: p.Tokens,
		DpRank: cand.Worker.DpRank, ExpiresAt: p.Expires, WorkerID: cand.Worker.WorkerID,
	})
	if err != nil {
		e.ahead.Skipped(p, "encode")
		e.log.Error("encode header-free prefetch", "request_id", p.ID, "err", err)
		return
	}
	err = e.sender.Send(cand.Endpoint, actions.Hint{MessageID: id, Body: body, Deadline: p.Expires,
		Release: e.bodies.release, Sent: e.recordOnSent(req, cand, p.Expires)})
	if err != nil {
		e.bodies.put(body)
		e.ahead.Skipped(p, "")
		e.counters.Ahead.Dropped.Inc(actions.DropReason(err))
		e.log.Warn("header-free prefetch not queued", "request_id", p.ID, "endpoint", cand.Endpoint, "err", err)
		return
	}
	e.ahead.Queued(p, cand.Worker.WorkerID)
	e.log.Debug("header-free prefetch queued", "request_id", p.ID, "worker_id", cand.Worker.WorkerID,
		"dp_rank", cand.Worker.DpRank, "endpoint", cand.Endpoint)
}

// contextKey names a prompt's context across sessions: XXH3-64 of its
// tokens (u32 little-endian) and of what changes its pages' hashes.
func contextKey(req *schemas.RequestEvent) string {
	if len(req.TokenIDs) == 0 {
		return ""
	}
	h := xxh3.New()
	var b [4]byte
	for _, t := range req.TokenIDs {
		binary.LittleEndian.PutUint32(b[:], t)
		_, _ = h.Write(b[:])
	}
	_, _ = h.WriteString("\x00" + req.Model + "\x00" + req.LoraName + "\x00" + req.CacheSalt)
	return strconv.FormatUint(h.Sum64(), 16)
}

// aheadTime is an event's time for the scheduler: its own stamp, else
// its stream time, else now.
func (e *Engine) aheadTime(d Delivery, ms int64) time.Time {
	if at := eventTime(d, ms); !at.IsZero() {
		return at
	}
	return e.now()
}
