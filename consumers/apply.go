package consumers

import (
	"errors"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// ApplyKVEvents returns the ApplyFunc of kv.events.<worker_id>: Dynamo
// RouterEvent JSON into the index. A stored event whose parent block is
// unknown is counted and dropped, as Dynamo's indexer does.
func ApplyKVEvents(ix *kvevents.Index, lim schemas.Limits, counters *metrics.Counters) ApplyFunc {
	return func(msg jetstream.Msg) error {
		data := msg.Data()
		f, ok := schemas.DetectFormat(msg.Headers().Get("Content-Type"), data)
		if !ok || f != schemas.FormatJSON {
			return &schemas.DecodeError{Kind: "router_event", Reason: "not a Dynamo RouterEvent JSON object"}
		}
		ev, err := lim.DecodeRouterEvent(data)
		if err != nil {
			return err
		}
		err = ix.Apply(kvevents.FromRouterEvent(ev))
		if errors.Is(err, kvevents.ErrUnknownParent) {
			counters.Inc("kv_events.unknown_parent")
			return nil
		}
		if err == nil {
			counters.Inc("kv_events.applied|" + ev.Event.Data.Kind.String())
		}
		return err
	}
}

// ApplyLoad returns the ApplyFunc of kv.load.<worker_id>. A report without
// a worker id takes the one in its subject.
func ApplyLoad(t *routing.LoadTable, lim schemas.Limits) ApplyFunc {
	return func(msg jetstream.Msg) error {
		l, err := lim.DecodeLoad(msg.Data(), msg.Headers().Get("Content-Type"))
		if err != nil {
			return err
		}
		if l.WorkerID == 0 {
			if id, err := streams.WorkerFromSubject(msg.Subject()); err == nil {
				l.WorkerID = id
			}
		}
		t.Update(*l)
		return nil
	}
}
