package main

import (
	"log/slog"
	"maps"
	"slices"

	"github.com/hintstream/hintstream/actions"
)

// stoppedAttrs are the attributes of run's "stopped" line: "counters",
// every counter by its metric name, and "endpoints", each endpoint's
// sender stats (actions.EndpointStats.LogValue: snake_case keys, durations
// as strings). Both are slog groups, so the text format prints
// counters.requests.received=5 rather than a Go map dump, and the JSON
// format nests objects.
func stoppedAttrs(counters map[string]uint64, endpoints map[string]actions.EndpointStats) []any {
	es := make([]any, 0, len(endpoints))
	for _, ep := range slices.Sorted(maps.Keys(endpoints)) {
		es = append(es, slog.Any(ep, endpoints[ep]))
	}
	return []any{countersAttr(counters), slog.Group("endpoints", es...)}
}

// countersAttr is a "counters" group of every counter, sorted by name.
func countersAttr(counters map[string]uint64) slog.Attr {
	cs := make([]any, 0, len(counters))
	for _, name := range slices.Sorted(maps.Keys(counters)) {
		cs = append(cs, slog.Uint64(name, counters[name]))
	}
	return slog.Group("counters", cs...)
}
