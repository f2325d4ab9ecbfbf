package whatif

import (
	"fmt"
	"math"
	"strings"
)

// Two rows that cost the same to the token look like a bug to a reader
// (is the switch even on?). annotate says why on the later row, from
// what the run measured: the earlier equal row is the one that differs
// least from it (ideally by one switch), and the note names the switch
// and what it did.

// sameCost says two costs are equal to the token.
func sameCost(a, b float64) bool { return math.Round(a) == math.Round(b) }

// annotate sets Note on every policy or peer row that costs what an
// earlier off, policy or peer row does.
func (p *Point) annotate() {
	for i := range p.Runs {
		r := &p.Runs[i]
		if r.Kind != "policy" && r.Kind != "peer" {
			continue
		}
		r.Note = ""
		best, bestDiff := -1, 0
		for j := range p.Runs[:i] {
			o := p.Runs[j]
			if (o.Kind != "off" && o.Kind != "policy" && o.Kind != "peer") || !sameCost(o.Cost, r.Cost) {
				continue
			}
			added, dropped := minus(r.Policy.toggles(), o.Policy.toggles()), minus(o.Policy.toggles(), r.Policy.toggles())
			if d := len(added) + len(dropped); best < 0 || d < bestDiff {
				best, bestDiff = j, d
			}
		}
		if best >= 0 {
			r.Note = whyEqual(*r, p.Runs[best])
		}
	}
}

// whyEqual says why r costs what o does, naming every switch that
// differs.
func whyEqual(r, o RunResult) string {
	added := minus(r.Policy.toggles(), o.Policy.toggles())
	dropped := minus(o.Policy.toggles(), r.Policy.toggles())
	s := fmt.Sprintf("same cost as %s to the token", o.Name)
	var parts []string
	if len(added) > 0 {
		parts = append(parts, "this row has "+strings.Join(added, " and ")+", "+o.Name+" not")
	}
	if len(dropped) > 0 {
		parts = append(parts, o.Name+" has "+strings.Join(dropped, " and ")+", this row not")
	}
	if len(parts) == 0 {
		return s + ": the same switches"
	}
	return s + ": " + strings.Join(parts, "; ") + "; none of it changed a prefill token"
}
