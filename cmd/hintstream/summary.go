package main

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/hintstream/hintstream/actions/zmqsend"
)

// stoppedAttrs are the attributes of run's "stopped" line: "counters",
// every nonzero counter by its exposed name (metrics' LogAttrs:
// snake_case, a labelled family as a group by label value), and
// "endpoints", each endpoint's sender stats (zmqsend.EndpointStats.LogValue:
// snake_case keys, durations as strings). Both are slog groups, so the
// text format prints counters.requests_received_total=5 rather than a Go
// map dump, and the JSON format nests objects.
func stoppedAttrs(counters []slog.Attr, endpoints map[string]zmqsend.EndpointStats) []any {
	es := make([]any, 0, len(endpoints))
	for _, ep := range slices.Sorted(maps.Keys(endpoints)) {
		es = append(es, slog.Any(ep, endpoints[ep]))
	}
	return []any{countersAttr(counters), slog.Group("endpoints", es...)}
}

// countersAttr is the "counters" group of a summary.
func countersAttr(counters []slog.Attr) slog.Attr {
	return slog.Attr{Key: "counters", Value: slog.GroupValue(counters...)}
}
