package engine

import (
	"github.com/hintstream/hintstream/streams"
)

// For members that serve only some models (--models), the KV events of
// workers EngineDeps.KeepWorker rejects are skipped (counted as
// kv_events.skipped_model). The worker comes from the subject
// (kv.events.<worker_id>) without decoding (Engine.KV); on other subjects
// (Dynamo's single queue subject) from the decoded events (ApplyKV). A message that does not
// decode is dead-lettered as usual; an event-plane frame is not filtered.

// skipBySubject reports whether m's subject names a worker not served.
func (e *Engine) skipBySubject(m Message) bool {
	if e.keep == nil {
		return false
	}
	id, err := streams.WorkerFromSubject(m.Subject)
	if err != nil || e.keep(id) {
		return false
	}
	e.counters.KVEventsSkippedModel.Inc()
	return true
}

// skipByEvents reports whether none of b's events is of a served worker.
func (e *Engine) skipByEvents(b KVBatch) bool {
	if e.keep == nil || b.Envelope != nil || len(b.Events) == 0 {
		return false
	}
	for _, ev := range b.Events {
		if e.keep(ev.Worker.WorkerID) {
			return false
		}
	}
	e.counters.KVEventsSkippedModel.Inc()
	return true
}
