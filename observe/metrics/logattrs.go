package metrics

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hintstream/hintstream/decide/tooltime"
)

// LogAttrs are the nonzero counters for run's shutdown line, keyed by
// their exposed names without the hintstream_ prefix (snake_case, the
// names an operator greps /metrics for): requests_received_total=5, and
// a labelled family as a group by label value,
// hints_prefetch_skipped_total.no_worker=1. A tool-labelled family lists
// its LogTopTools most observed tools and sums the rest as other: a log
// line must stay bounded however many tools the model named.
func (f *set) LogAttrs() []slog.Attr {
	var out []slog.Attr
	short := func(name string) string { return strings.TrimPrefix(name, ns) }
	for _, c := range f.all {
		switch c := c.(type) {
		case *Counter:
			if v := c.Value(); v > 0 {
				out = append(out, slog.Uint64(short(c.Name()), v))
			}
		case *CounterVec:
			vals := c.Values()
			var group []any
			for _, lv := range slices.Sorted(maps.Keys(vals)) {
				if vals[lv] > 0 {
					group = append(group, slog.Uint64(lv, vals[lv]))
				}
			}
			if len(group) > 0 {
				out = append(out, slog.Group(short(c.Name()), group...))
			}
		}
	}
	var top map[string]bool // the counted tools named, for the expected times
	for _, c := range f.tool {
		if v, ok := c.(*CounterVec); ok {
			var a slog.Attr
			if a, top = toolCounts(v, short); len(a.Value.Group()) > 0 {
				out = append(out, a)
			}
		}
	}
	for _, c := range f.tool {
		if g, ok := c.(*GaugeVec); ok {
			vals := g.Values()
			var group []any
			for _, tool := range slices.Sorted(maps.Keys(vals)) {
				if top[tool] {
					group = append(group, slog.String(tool, time.Duration(vals[tool]*float64(time.Second)).String()))
				}
			}
			if len(group) > 0 {
				out = append(out, slog.Group(short(g.Name()), group...))
			}
		}
	}
	slices.SortFunc(out, func(a, b slog.Attr) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// LogTopTools is how many tools the shutdown line names per tool-labelled
// family; the others are summed (counts) or left out (expected times)
// under tooltime.Other's label.
const LogTopTools = 20

// toolCounts is v's group of its LogTopTools most counted tools, the rest
// summed as other, and the set of tools it names.
func toolCounts(v *CounterVec, short func(string) string) (slog.Attr, map[string]bool) {
	vals := v.Values()
	tools := slices.SortedFunc(maps.Keys(vals), func(a, b string) int {
		if vals[a] != vals[b] {
			return cmp.Compare(vals[b], vals[a])
		}
		return strings.Compare(a, b)
	})
	named := map[string]bool{}
	var group []any
	var rest uint64
	for _, tool := range tools {
		switch {
		case vals[tool] == 0:
		case len(named) < LogTopTools && tool != tooltime.Other:
			named[tool] = true
			group = append(group, slog.Uint64(tool, vals[tool]))
		default:
			rest += vals[tool]
		}
	}
	if rest > 0 {
		group = append(group, slog.Uint64(tooltime.Other, rest))
	}
	return slog.Group(short(v.Name()), group...), named
}
