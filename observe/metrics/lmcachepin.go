package metrics

// Outcomes of an LMCache controller pin call (package lmcachepin), as
// hintstream_lmcache_pin_calls_total labels them. The failure reasons
// are the adapter's (AdapterFail*): both make their calls with
// adapter.Caller.
const (
	LMCachePinOK      = "ok"      // answered 2xx
	LMCachePinExpired = "expired" // the pin's deadline passed before a call could be made or retried
	LMCachePinClosed  = "closed"  // hintstream stopped first
	LMCachePinDropped = "queue_full"
)

// LMCachePins counts the tool-call pins hintstream keeps in LMCache
// through its controller: pins held and how each ended, and the calls
// made by outcome.
type LMCachePins struct {
	// Held: pins taken (a tool call, or a pin adopted from the store at
	// start). Released: let go because the session's next turn came (the
	// tool returned). Lapsed: let go because hintstream's TTL ran out, at
	// a re-pin or at start.
	Held, Released, Lapsed *Counter
	// Calls: /pin calls by outcome (one count per call, its retries
	// included); Retries: attempts after the first; Failed: attempts
	// that failed, by reason.
	Calls   *CounterVec
	Retries *Counter
	Failed  *CounterVec
	// Skipped: tool-call pins not taken, by reason.
	Skipped *CounterVec
}

func newLMCachePins(b builder) LMCachePins {
	return LMCachePins{
		Held:     b.counter("hintstream_lmcache_pins_held_total", "Tool-call pins hintstream took in LMCache (a tool call, or a live pin adopted from the store at start)."),
		Released: b.counter("hintstream_lmcache_pins_released_total", "LMCache pins let go because the session's next turn came (the tool returned)."),
		Lapsed:   b.counter("hintstream_lmcache_pins_lapsed_total", "LMCache pins let go because hintstream's TTL for them ran out (at a re-pin, or found lapsed at start)."),
		Calls: b.vec("hintstream_lmcache_pin_calls_total", "outcome", "LMCache controller /pin calls, by outcome (retries within one call counted once).",
			LMCachePinOK, LMCachePinExpired, LMCachePinClosed, LMCachePinDropped,
			AdapterFailRefused, AdapterFailServerError, AdapterFailUnreachable, AdapterFailTimeout, AdapterFailRedirected),
		Retries: b.counter("hintstream_lmcache_pin_retries_total", "LMCache controller /pin attempts after a server error or no connection, before the pin's deadline."),
		Failed: b.vec("hintstream_lmcache_pin_failures_total", "reason", "LMCache controller /pin attempts that failed or were refused, by reason.",
			AdapterFailRefused, AdapterFailServerError, AdapterFailUnreachable, AdapterFailTimeout, AdapterFailRedirected),
		Skipped: b.vec("hintstream_lmcache_pins_skipped_total", "reason", "Tool-call pins not taken in LMCache, by reason.", "unknown_namespace", "store"),
	}
}
