package observe

import (
	"cmp"
	"slices"

	"github.com/hintstream/hintstream/decide/tooltime"
)

// Tool names come from responses, that is from outside: 100,000 distinct
// names once made 200,000 series and an 11.5 MB /metrics. The families
// labelled tool keep the DefaultTopTools most observed tools by name and
// fold the rest into tool="other".
const (
	// DefaultTopTools is Sources.TopTools' default.
	DefaultTopTools = 32
	// OtherTools is the tool label of the tools outside the top ones (and
	// of those the learner does not track, tooltime.Other). A tool really
	// named "other" shares it.
	OtherTools = tooltime.Other
)

// observedFamily ranks the tools: the counter of observed tool times.
const observedFamily = ns + "tooltime_observed_total"

// boundTools trims every family labelled tool to the top n tools of
// observedFamily (ties broken by name; "" and OtherTools always stay).
// Counters of the other tools are added to OtherTools; gauges of them are
// left out, since a sum of expected times means nothing. A tool entering
// the top n moves its count out of OtherTools, which Prometheus reads as
// a counter reset of that one series.
func boundTools(fams map[string]*family, n int) {
	top := map[string]bool{"": true, OtherTools: true}
	if f := fams[observedFamily]; f != nil {
		type tv struct {
			tool string
			n    float64
		}
		ranked := make([]tv, 0, len(f.labelled))
		for tool, v := range f.labelled {
			if !top[tool] {
				ranked = append(ranked, tv{tool, v})
			}
		}
		slices.SortFunc(ranked, func(a, b tv) int {
			if c := cmp.Compare(b.n, a.n); c != 0 {
				return c
			}
			return cmp.Compare(a.tool, b.tool)
		})
		for _, r := range ranked[:min(n, len(ranked))] {
			top[r.tool] = true
		}
	}
	for _, f := range fams {
		if f.label != "tool" {
			continue
		}
		for tool, v := range f.labelled {
			if top[tool] {
				continue
			}
			delete(f.labelled, tool)
			if !f.gauge {
				f.labelled[OtherTools] += v
			}
		}
	}
}
