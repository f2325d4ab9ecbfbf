package index

// maxMissingRanges bounds the id ranges a stale worker waits for; past it
// the worker waits for a cleared event instead.
const maxMissingRanges = 4

// idRange is an inclusive range of event ids not yet seen.
type idRange struct{ lo, hi uint64 }

// eventOrder checks one (worker, dp rank)'s event ids. Ids rise by one
// per engine batch, and events of one batch share an id.
type eventOrder struct {
	seen      bool
	last      uint64 // highest id seen, 0 if none
	stale     bool
	untracked bool      // a gap too fragmented to track: only a clear resyncs
	missing   []idRange // ids skipped by gaps and not yet seen late
}

type orderVerdict uint8

const (
	inOrder orderVerdict = iota
	gap
	outOfOrder
)

// observe records id and returns its verdict; for a gap, expected is the
// id that should have come. Id 0 (no id) is always in order.
func (o *eventOrder) observe(id uint64) (v orderVerdict, expected uint64) {
	o.seen = true
	switch {
	case id == 0:
		return inOrder, 0
	case o.last == 0 || id == o.last || id == o.last+1:
		o.last = id
		return inOrder, 0
	case id > o.last:
		expected = o.last + 1
		o.stale = true
		if !o.untracked {
			if len(o.missing) == maxMissingRanges {
				o.untrack()
			} else {
				o.missing = append(o.missing, idRange{expected, id - 1})
			}
		}
		o.last = id
		return gap, expected
	default:
		o.fill(id)
		return outOfOrder, 0
	}
}

// fill takes a late id out of the missing ranges; the worker is in sync
// again once none is left.
func (o *eventOrder) fill(id uint64) {
	if !o.stale || o.untracked {
		return
	}
	for i, r := range o.missing {
		if id < r.lo || id > r.hi {
			continue
		}
		switch {
		case r.lo == r.hi:
			o.missing = append(o.missing[:i], o.missing[i+1:]...)
		case id == r.lo:
			o.missing[i].lo++
		case id == r.hi:
			o.missing[i].hi--
		case len(o.missing) == maxMissingRanges:
			o.untrack()
			return
		default:
			o.missing = append(o.missing, idRange{id + 1, r.hi})
			o.missing[i].hi = id - 1
		}
		break
	}
	if len(o.missing) == 0 {
		o.stale = false
	}
}

func (o *eventOrder) untrack() {
	o.untracked = true
	o.missing = nil
}

// resync marks the stream complete from here on (after a device clear).
// The sequence goes on from the clear's own id; a clear without one (a
// restarted engine, which counts from 0 again) accepts any next id, so
// the new run's ids do not read as late.
func (o *eventOrder) resync(id uint64) {
	o.stale, o.untracked, o.missing = false, false, nil
	o.last = id
}
