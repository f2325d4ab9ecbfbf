package engine

import (
	"fmt"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// ReasonWorkerMismatch labels KV events and load reports whose body names
// a worker other than the one in their subject (kv.events.<id>,
// kv.load.<id>). The subject is what a least-privilege server lets one
// worker's user publish on; the body is not checked by anyone. Trusting
// the body would let worker 2, on its own subject, clear worker 1's
// blocks or set its load.
const ReasonWorkerMismatch = "worker_id disagrees with subject"

// checkSubjectWorker refuses a body worker id that differs from the one
// in subject. A subject without a worker id token (Dynamo's single
// queue subject) names no worker, so any body id passes.
func checkSubjectWorker(kind, subject string, body uint64) error {
	id, err := streams.WorkerFromSubject(subject)
	if err != nil || id == body {
		return nil
	}
	return &schemas.DecodeError{Kind: kind, Reason: ReasonWorkerMismatch,
		Err: fmt.Errorf("body names worker %d on subject %q", body, subject)}
}
