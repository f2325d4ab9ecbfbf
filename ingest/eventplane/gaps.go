package eventplane

// Gaps counts, publisher by publisher, the frames of an event-plane
// topic that a reader never saw. Every EventPublisher numbers its frames
// 0, 1, 2, ... under a publisher_id drawn at random when it starts
// (lib/runtime/src/transports/event_plane/mod.rs), so a restarted
// publisher is a new publisher and a jump in one publisher's sequence is
// frames lost on the way (a ZMQ high-water mark, a NATS reconnect). The
// first frame seen of a publisher starts its count: what it sent before
// the reader joined is not a gap. The zero value is ready to use; it is
// not safe for concurrent use.
type Gaps struct {
	last  map[uint64]uint64
	stats GapStats
}

// MaxGapPublishers bounds the publishers a Gaps remembers. Past it one is
// forgotten for each new one (its next frame starts its count again):
// publishers come and go with workers and routers, and a flood of made-up
// publisher ids must not grow the map without end.
const MaxGapPublishers = 4096

// GapStats are a Gaps' counters.
type GapStats struct {
	Publishers uint64 // publishers seen (first frames)
	Gaps       uint64 // jumps in a publisher's sequence
	Missing    uint64 // frames those jumps skipped
	Repeated   uint64 // frames at or below their publisher's last sequence
	Forgotten  uint64 // publishers dropped at MaxGapPublishers
}

// Observe records a frame and returns how many frames of its publisher
// went missing right before it (0 when none) and whether it is new: a
// frame at or below the publisher's last sequence (a redelivery, a
// duplicate from two brokers) is not.
func (g *Gaps) Observe(publisher, sequence uint64) (missing uint64, fresh bool) {
	if g.last == nil {
		g.last = map[uint64]uint64{}
	}
	last, seen := g.last[publisher]
	switch {
	case !seen:
		if len(g.last) >= MaxGapPublishers {
			for k := range g.last {
				delete(g.last, k)
				g.stats.Forgotten++
				break
			}
		}
		g.stats.Publishers++
	case sequence <= last:
		g.stats.Repeated++
		return 0, false
	case sequence > last+1:
		missing = sequence - last - 1
		g.stats.Gaps++
		g.stats.Missing += missing
	}
	g.last[publisher] = sequence
	return missing, true
}

// Stats returns the counters.
func (g *Gaps) Stats() GapStats { return g.stats }
