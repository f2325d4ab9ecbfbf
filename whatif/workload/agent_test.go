package workload

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// quantile is the nearest-rank q quantile of sorted.
func quantile(sorted []float64, q float64) float64 {
	return sorted[min(max(int(math.Ceil(q*float64(len(sorted))))-1, 0), len(sorted)-1)]
}

func TestLogQuantilesMeetTheirKnots(t *testing.T) {
	d := newLogQuantiles([]float64{0.5, 0.9, 0.99}, []float64{8, 70, 600})
	for k, z := range d.z {
		if got := d.at(z); math.Abs(got-[]float64{8, 70, 600}[k]) > 1e-6*got {
			t.Fatalf("knot %d: %v", k, got)
		}
	}
	if z := normalQuantile(0.9); math.Abs(z-1.2815515655) > 1e-8 {
		t.Fatalf("z(0.9) = %v", z)
	}
}

// agentTolerance is how far (relative) a generated quantile may be from
// the published one: 15%, about what seeds differ by at 32
// conversations (two runs of the same deployment differ more).
const agentTolerance = 0.15

// The agent profile's requests have the published statistics: inputs,
// outputs, tool-call share, gaps after tool calls and human turns,
// requests per conversation, the shared prefix, prompts that grow.
func TestAgentProfileMatchesTheStatistics(t *testing.T) {
	var in, out, toolGap, humanGap, perConv []float64
	var calls, turns int
	for seed := range uint64(8) {
		w, err := GenerateAgent(AgentConfig{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for i := range w.Len() {
			r := w.Req(i)
			in = append(in, float64(r.InputLength))
			out = append(out, float64(r.OutputLength))
			count[r.Session]++
			turns++
			if !r.FinishKnown {
				t.Fatalf("request %d: finish not known", i)
			}
			if r.ToolCall {
				calls++
			}
			if slices.Compare(r.HashIDs[:AgentPrefixTokens/w.BlockSize], w.Req(0).HashIDs[:AgentPrefixTokens/w.BlockSize]) != 0 {
				t.Fatalf("request %d does not open with the shared prefix", i)
			}
			if r.Next >= 0 {
				n := w.Req(r.Next)
				gap := (n.At - r.ResponseAt).Seconds()
				if r.ToolCall {
					toolGap = append(toolGap, gap)
				} else {
					humanGap = append(humanGap, gap)
				}
				// The next prompt holds this one (unless compacted).
				if n.InputLength > r.InputLength && !slices.Equal(n.HashIDs[:r.InputLength/w.BlockSize], r.HashIDs[:r.InputLength/w.BlockSize]) {
					t.Fatalf("request %d: its next turn does not extend it", i)
				}
			}
		}
		for _, n := range count {
			perConv = append(perConv, float64(n))
		}
	}
	for _, s := range [][]float64{in, out, toolGap, humanGap, perConv} {
		slices.Sort(s)
	}
	check := func(name string, got, want float64) {
		t.Helper()
		t.Logf("%s: %.4g (target %.4g)", name, got, want)
		if math.Abs(got-want) > agentTolerance*want {
			t.Errorf("%s: %.4g, want %.4g ± %.0f%%", name, got, want, 100*agentTolerance)
		}
	}
	for k, q := range []float64{0.1, 0.5, 0.9} {
		check("input P"+pctName(q), quantile(in, q), AgentInputQuantiles[k])
		check("output P"+pctName(q), quantile(out, q), AgentOutputQuantiles[k])
	}
	for k, q := range []float64{0.5, 0.9, 0.99} {
		check("tool gap P"+pctName(q), quantile(toolGap, q), AgentToolGapQuantiles[k])
	}
	for k, q := range []float64{0.25, 0.5, 0.75} {
		check("requests per conversation P"+pctName(q), quantile(perConv, q), AgentTurnsQuantiles[k])
	}
	check("human gap P50", quantile(humanGap, 0.5), AgentHumanGapMedian.Seconds())
	check("tool-call share", float64(calls)/float64(turns), AgentToolCallShare)
	t.Logf("%d requests in %d conversations", turns, len(perConv))
}

func pctName(q float64) string { return fmt.Sprintf("%g", math.Round(q*100)) }
