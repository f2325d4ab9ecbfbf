package receiver

import (
	"fmt"

	"github.com/hintstream/hintstream/schemas"
)

// WithWorkerID makes the receiver drop prefetches whose worker_id names
// another worker (counted in receiver.other_worker): two registry records
// listing one endpoint, or an address reused by a new worker, would
// otherwise make this worker load another's prompts. A prefetch without
// worker_id (0, from an older hintstream) is taken.
func WithWorkerID(id uint64) Option {
	return func(o *options) error {
		if id == 0 {
			return fmt.Errorf("%w: worker id 0 names no worker", ErrInvalidOption)
		}
		o.workerID = id
		return nil
	}
}

// otherWorkers reports (and counts) a prefetch meant for another worker.
func (r *Receiver) otherWorkers(p *schemas.PrefetchPayload) bool {
	if r.o.workerID == 0 || p.WorkerID == 0 || p.WorkerID == r.o.workerID {
		return false
	}
	r.o.counters.OtherWorker.Inc()
	return true
}
