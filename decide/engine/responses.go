package engine

import (
	"context"
	"errors"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
)

// DecodeResponse decodes a response event within lim. Its errors match
// schemas.ErrMalformed.
func DecodeResponse(lim schemas.Limits, m Message) (*schemas.ResponseEvent, error) {
	if err := lim.CheckHeaders("response", m.Header); err != nil {
		return nil, err
	}
	return lim.DecodeResponse(m.Data, m.Header.Get("Content-Type"))
}

// Response decodes one response event (DecodeResponse) and decides on it
// (OnResponse); a malformed one is Rejected.
func (e *Engine) Response(ctx context.Context, d Delivery, m Message) Outcome {
	e.counters.ResponsesReceived.Inc()
	resp, err := DecodeResponse(e.d.Limits, m)
	if err != nil {
		return Rejected(err)
	}
	return e.OnResponse(ctx, d, resp)
}

// OnResponse pins on a tool call (pins off: nothing to do). A response
// whose request is not indexed yet is retried after EngineDeps.RetryDelay;
// one whose pin was queued is Held until the pin has left.
func (e *Engine) OnResponse(ctx context.Context, d Delivery, resp *schemas.ResponseEvent) Outcome {
	out := e.decideResponse(ctx, d, resp)
	e.observeResponse(ctx, ObservedResponse{At: eventTime(d, resp.CompletedAtMs), Event: resp})
	return out
}

func (e *Engine) decideResponse(ctx context.Context, d Delivery, resp *schemas.ResponseEvent) Outcome {
	if e.pins == nil {
		return Done()
	}
	queued, err := e.pins.OnResponse(ctx, resp, pins.Arrival{Time: d.Time, Unknown: d.Unknown != nil,
		Delivered: d.Delivered, Working: d.Working, Done: d.Done})
	switch {
	case errors.Is(err, pins.ErrNotYet):
		return RetryAfter(e.retryDelay, nil)
	case queued:
		return HeldUntilSent() // settled by the sender once the pin has left
	}
	return Done()
}
