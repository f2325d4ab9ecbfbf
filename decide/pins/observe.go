package pins

import "time"

// Observer hears what the pins do, so that what becomes of each pin can
// be reported (package agents): kept when the session's next turn comes
// before the pin expires, lapsed when it does not. Its methods are called
// from the consumers' goroutines and must not block.
type Observer interface {
	// Pinned: a pin of tokens tokens of session's context, served by
	// worker (dp rank dpRank), was queued and lasts until expires.
	Pinned(session string, worker uint64, dpRank uint32, tokens int, expires time.Time)
	// Renewed: session's pin was renewed until expires.
	Renewed(session string, expires time.Time)
}
