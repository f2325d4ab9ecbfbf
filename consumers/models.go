package consumers

import (
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// KeepWorkers wraps a KV-event ApplyFunc so that messages of workers keep
// rejects are skipped (counted as kv_events.skipped_model), for members
// that serve only some models (--models). The worker comes from the
// subject (kv.events.<worker_id>) without decoding; on other subjects
// (Dynamo's single queue subject) the message is decoded once more to
// find it. A message that does not decode is passed on, to be
// dead-lettered by apply as usual.
func KeepWorkers(apply ApplyFunc, lim schemas.Limits, keep func(workerID uint64) bool, counters *metrics.Families) ApplyFunc {
	return func(msg jetstream.Msg) error {
		if id, err := streams.WorkerFromSubject(msg.Subject()); err == nil {
			if !keep(id) {
				counters.KVEventsSkippedModel.Inc()
				return nil
			}
			return apply(msg)
		}
		var one [1]kvevents.Event
		evs, err := decodeKVEvents(msg, lim, &one)
		if err != nil || len(evs) == 0 {
			return apply(msg)
		}
		for _, ev := range evs {
			if keep(ev.Worker.WorkerID) {
				return apply(msg)
			}
		}
		counters.KVEventsSkippedModel.Inc()
		return nil
	}
}
