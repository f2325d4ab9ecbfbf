package pins

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// TokenPins keeps pins in a store that names a prompt's pages by its
// tokens and keeps no TTL of its own: LMCache's controller (package
// lmcachepin), whose POST /pin takes an instance, a location and tokens,
// and which offers no unpin. hintstream owns the TTL: Hold keeps the pin
// until Until (re-pinning as the store needs), Release lets go of it
// when the session's next turn comes (the tool returned).
type TokenPins interface {
	// Hold takes the pin and reports whether it was taken; it must not
	// wait for the store's answer.
	Hold(ctx context.Context, pin TokenPin) bool
	// Release lets go of the pin of slot if it is still trigger's.
	Release(ctx context.Context, slot, trigger string)
}

// TokenPin is one tool call's pin in a TokenPins store.
type TokenPin struct {
	Slot    string // one per session, as the Mooncake pin's
	Trigger string // the tool-call response's request id
	Worker  schemas.WorkerRecord
	DpRank  uint32
	Tokens  []uint32 // the prompt and the response
	Until   time.Time
}

// holdTokens pins a tool call's tokens in p.Tokens until its TTL, or
// --pin-renew-max after the response when that is longer (a token store
// is re-pinned anyway, so the renewals are built in), and writes the
// session's slot record when no Mooncake pin does, so that the next turn
// releases it. A request with a LoRA adapter or a cache salt gets none:
// LMCache's /pin carries tokens only, so it would pin (or find) the pages
// of the unsalted, adapter-less prompt.
func (p *Pinning) holdTokens(ctx context.Context, req *schemas.RequestEvent, resp *schemas.ResponseEvent, tokens []uint32, simToolMs int64, a Arrival) {
	if p.Tokens == nil || len(tokens) == 0 {
		return
	}
	if req.LoraName != "" || req.CacheSalt != "" {
		p.Counters.LMCachePins.Skipped.Inc("unknown_namespace")
		return
	}
	tools, ttl := p.toolTTL(resp, simToolMs)
	now := p.now()
	until := now.Add(ttl)
	if p.RenewMax > ttl {
		until = now.Add(p.RenewMax)
	}
	session, slot := slotOf(req, resp)
	w, _ := p.Workers.Get(resp.WorkerID)
	if !p.Tokens.Hold(ctx, TokenPin{Slot: slot, Trigger: resp.RequestID, Worker: w, DpRank: resp.DpRank, Tokens: tokens, Until: until}) {
		return
	}
	if p.Endpoint != "" || session == "" {
		return // the Mooncake pin writes the slot record; without a session no turn releases it
	}
	rec := PinRecord{Slot: slot, Trigger: resp.RequestID, Tools: tools, CompletedAtMs: a.eventTime(resp.CompletedAtMs).UnixMilli(),
		ExpiresAtMs: until.UnixMilli()}
	if _, err := p.putSlot(ctx, session, rec); err != nil {
		if isBucketFull(err) {
			p.Counters.PinsSlotsFull.Inc()
		}
		p.Log.Warn("pin slot not recorded", "session", session, "err", err)
	}
}
