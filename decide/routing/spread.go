package routing

import (
	"math"
	"time"

	"github.com/hintstream/hintstream/kvevents"
)

// forgetBelow is the virtual load, in blocks, under which an entry is
// dropped: it can no longer change a choice worth a block.
const forgetBelow = 1e-3

// virtualLoads is burst spreading's state: per (worker, dp rank) a number
// of virtual decode blocks as of a time, decaying exponentially. Not safe
// for concurrent use; the Selector guards it.
type virtualLoads struct {
	halfLife time.Duration
	m        map[kvevents.WorkerKey]virtualLoad
}

type virtualLoad struct {
	blocks float64
	at     time.Time
}

func newVirtualLoads(halfLife time.Duration) *virtualLoads {
	return &virtualLoads{halfLife: halfLife, m: map[kvevents.WorkerKey]virtualLoad{}}
}

// get returns k's virtual blocks at now: blocks * 2^(-(now-at)/halfLife).
// A clock that went back does not make the load grow.
func (v *virtualLoads) get(k kvevents.WorkerKey, now time.Time) float64 {
	e, ok := v.m[k]
	if !ok {
		return 0
	}
	return e.decayed(now, v.halfLife)
}

func (e virtualLoad) decayed(now time.Time, halfLife time.Duration) float64 {
	dt := now.Sub(e.at)
	if dt <= 0 {
		return e.blocks
	}
	return e.blocks * math.Exp2(-float64(dt)/float64(halfLife))
}

// add books blocks on k at now and forgets entries that have decayed away,
// so the map holds only recently chosen workers.
func (v *virtualLoads) add(k kvevents.WorkerKey, now time.Time, blocks float64) {
	for key, e := range v.m {
		if key != k && e.decayed(now, v.halfLife) < forgetBelow {
			delete(v.m, key)
		}
	}
	v.m[k] = virtualLoad{blocks: v.get(k, now) + blocks, at: now}
}
