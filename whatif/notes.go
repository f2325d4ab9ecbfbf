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
		var facts []string // one per equal row that lacks only one switch of r's
		for j := range p.Runs[:i] {
			o := p.Runs[j]
			if (o.Kind != "off" && o.Kind != "policy" && o.Kind != "peer") || !sameCost(o.Cost, r.Cost) {
				continue
			}
			added, dropped := minus(r.Policy.toggles(), o.Policy.toggles()), minus(o.Policy.toggles(), r.Policy.toggles())
			if len(dropped) == 0 && len(added) == 1 {
				if f := switchFacts(added[0], *r, p.L3PinBudget); f != "" && !contains(facts, f) {
					facts = append(facts, f)
				}
			}
			if d := len(added) + len(dropped); best < 0 || d < bestDiff {
				best, bestDiff = j, d
			}
		}
		switch {
		case len(facts) > 0:
			r.Note = strings.Join(facts, "; ")
		case best >= 0:
			r.Note = whyEqual(*r, p.Runs[best], p.L3PinBudget)
		}
	}
}

func contains(s []string, x string) bool {
	for _, y := range s {
		if y == x {
			return true
		}
	}
	return false
}

// switchFacts is what one switch did in r, for the switches that
// report it ("" for the others).
func switchFacts(name string, r RunResult, budget int64) string {
	if name == "planner" {
		return plannerFacts(r.PlannerPins, budget)
	}
	return ""
}

// whyEqual says why r costs what o does, naming every switch that
// differs, and what each that reports it did.
func whyEqual(r, o RunResult, budget int64) string {
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
	s += ": " + strings.Join(parts, "; ") + "; none of it changed a prefill token"
	for _, a := range added {
		if f := switchFacts(a, r, budget); f != "" {
			s += " (" + f + ")"
		}
	}
	return s
}

func plannerFacts(pins int, budget int64) string {
	if pins == 0 {
		return "planner: 0 pins within budget " + FormatBytes(float64(budget))
	}
	return fmt.Sprintf("planner: %d pins, none changed an eviction", pins)
}
