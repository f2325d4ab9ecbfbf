package engine

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// RequestObserver is told of every turn (not wake-ups) and every
// response the engine decides on, with the event's time, after the
// engine's own decisions. The retention planner is one: it learns what is
// reused from them. It must copy what it keeps: the events are reused.
type RequestObserver interface {
	ObserveRequest(ctx context.Context, at time.Time, req *schemas.RequestEvent)
	ObserveResponse(ctx context.Context, at time.Time, resp *schemas.ResponseEvent)
}
