package whatif

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/whatif/simulate"
)

// These tests build Report values by hand: rendering and the notes are
// checked on known facts, with no simulation (fast under -race).

// row is a policy row of cost c, turning on what pol does.
func row(name string, pol simulate.Policy, cost float64) RunResult {
	kind := "policy"
	if pol.Peer != nil {
		kind = "peer"
	}
	return RunResult{Name: name, Kind: kind, Cost: cost, Policy: features(pol)}
}

// handPoint is a point whose off run costs 1,000 and whose rows are
// given, with the bounds after them; savings follow from the costs.
func handPoint(l3 int64, runs ...RunResult) Point {
	c := DefaultCluster()
	c.L3Bytes = l3
	p := Point{Cluster: c, L3Pages: c.L3Pages()}
	p.Runs = append([]RunResult{{Name: "no hints", Kind: "off", Cost: 1000, Policy: &Features{}}}, runs...)
	p.Runs = append(p.Runs, RunResult{Name: "clairvoyant bound", Kind: "bound", Cost: 400},
		RunResult{Name: "hint-reachable bound", Kind: "reachable", Cost: 500})
	for i := range p.Runs {
		r := &p.Runs[i]
		r.Saving = 1000 - r.Cost
		r.OfBound, r.OfReachable = Num(r.Saving/600), Num(r.Saving/500)
	}
	p.annotate()
	p.summarise()
	return p
}

func TestEqualRowsSayWhy(t *testing.T) {
	aff := simulate.Policy{Affinity: true}
	noRenewal := engine.Decisions{NoPinRenewal: true}
	// Equal to today's (two switches apart) and to no pin renewal (one
	// apart): the note names the one switch.
	busy := row("affinity, no pin renewal", simulate.Policy{Affinity: true, Decisions: noRenewal}, 950)
	renew := row("no pin renewal", simulate.Policy{Decisions: noRenewal}, 950)
	p := handPoint(8<<30,
		row("today's", simulate.Policy{}, 950),
		renew,
		row("today's + affinity", aff, 900),
		busy,
		row("faster", simulate.Policy{Affinity: true, NoPins: true}, 899.4), // 899 ≠ 900
		row("tool-call TTL (60 s)", simulate.Peers()[1], 1000),
	)
	notes := map[string]string{}
	for _, r := range p.Runs {
		notes[r.Name] = r.Note
	}
	for name, want := range map[string]string{
		"today's":                  "",
		"today's + affinity":       "",
		"faster":                   "",
		"affinity, no pin renewal": "same cost as no pin renewal to the token: this row has affinity, no pin renewal not; none of it changed a prefill token",
		"no pin renewal":           "same cost as today's to the token: this row has no pin renewal, today's not; none of it changed a prefill token",
		"tool-call TTL (60 s)":     "same cost as no hints to the token: this row has tool-call TTL of 1m0s, no hints not; none of it changed a prefill token",
	} {
		if got := notes[name]; got != want {
			t.Errorf("%s: note %q, want %q", name, got, want)
		}
	}
	if n := notes["clairvoyant bound"] + notes["no hints"]; n != "" {
		t.Errorf("a bound or the off row has a note: %q", n)
	}
}

func TestSummaryAndHintsWorth(t *testing.T) {
	aff := simulate.Policy{Affinity: true}
	arc := simulate.Peers()[3]
	pt := func(l3 int64, off, best, peer float64) Point {
		p := handPoint(l3, row("today's", simulate.Policy{}, 1000-best/2), row("today's + affinity", aff, 1000-best),
			row("ARC L3 eviction", arc, 1000-peer), row("today's + affinity on ARC L3", simulate.Peers()[4], 1000-best-50))
		// Rescale: this point's off run costs off.
		for i := range p.Runs {
			p.Runs[i].Cost += off - 1000
		}
		p.summarise()
		return p
	}
	sw := Sweep{Dim: SweepL3, Values: []float64{8 << 30, 16 << 30, 32 << 30}, Labels: []string{"8GiB", "16GiB", "32GiB"}}
	// Off costs 1,000 at 8 GiB, 700 at 16, 500 at 32; hintstream's best
	// saves 400 at 8 GiB (cost 600): no hints gets there at 16 + 16 × 100/200 = 24 GiB.
	rep := &Report{Source: "hand", Sweep: &sw, Points: []Point{pt(16<<30, 700, 100, 50), pt(8<<30, 1000, 400, 100), pt(32<<30, 500, 50, 10)}}
	rep.hintsWorth()
	if rep.HintsWorthL3Bytes == nil || *rep.HintsWorthL3Bytes != 16<<30 || rep.HintsWorthL3At != 8<<30 {
		t.Fatalf("hints worth %v at %d, want 16 GiB at 8 GiB", rep.HintsWorthL3Bytes, rep.HintsWorthL3At)
	}
	if s := rep.worthSentence(); !strings.Contains(s, "hints are worth 16.0 GiB of L3") {
		t.Fatalf("worth: %q", s)
	}
	s := rep.Points[1].Summary
	if s == nil || s.Best != "today's + affinity" || s.BestPeer != "ARC L3 eviction" || s.OverPeer != 4 ||
		math.Abs(float64(s.OfNoHints)-0.4) > 1e-12 || s.Better != "today's + affinity on ARC L3" {
		t.Fatalf("summary %+v", s)
	}
	flags := strings.Join(s.RunFlags, " ")
	for _, f := range []string{"--pin-endpoint", "--affinity-bucket"} {
		if !strings.Contains(flags, f) {
			t.Fatalf("run flags %q lack %s", flags, f)
		}
	}

	// No point gets there: the field is omitted and the page says so.
	rep.Points[0].Runs[0].Cost, rep.Points[2].Runs[0].Cost = 900, 800
	rep.hintsWorth()
	if rep.HintsWorthL3Bytes != nil {
		t.Fatalf("hints worth %d, want none within the sweep", *rep.HintsWorthL3Bytes)
	}
	if s := rep.worthSentence(); !strings.Contains(s, "more than the largest point") {
		t.Fatalf("worth: %q", s)
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil || strings.Contains(js.String(), "hints_worth_l3_bytes") {
		t.Fatalf("JSON has hints_worth_l3_bytes when never reached (%v)", err)
	}
}

// The page: real tables, the summary first, full legend names, charts,
// both bounds on every row, the notes, and nothing to fetch.
func TestHTMLReportIsTables(t *testing.T) {
	long := "today's + affinity + keep pin on next turn"
	planned := row(long, simulate.Policy{Affinity: true, Decisions: engine.Decisions{KeepPinOnNextTurn: true}}, 900)
	planned.Mechanism = &Mechanism{Retention: 300, Placement: 100, Timing: 50, WrongWorker: 25, NoSignal: 25, Total: 500}
	planned.Lost = &simulate.Lost{NoWakeup: 500, Total: 500}
	planned.SavingOverTime = []TimePoint{{1, 10}, {2, 100}}
	peer := row("Dynamo speculative prefill", simulate.Peers()[0], 950)
	peer.Source = simulate.Peers()[0].Peer.Source
	sw := Sweep{Dim: SweepL3, Values: []float64{8 << 30, 16 << 30}, Labels: []string{"8GiB", "16GiB"}}
	rep := &Report{Source: "hand <trace>", Sweep: &sw, Requests: 10,
		Points: []Point{handPoint(8<<30, row("today's + affinity", simulate.Policy{Affinity: true}, 900), planned, peer),
			handPoint(16<<30, row("today's + affinity", simulate.Policy{Affinity: true}, 900), planned, peer)}}
	rep.Points[1].Runs[0].Cost = 850
	rep.Points[0].Label, rep.Points[1].Label = "l3=8GiB", "l3=16GiB"
	rep.hintsWorth()
	dir := t.TempDir()
	if err := rep.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if strings.Contains(page, "<pre") {
		t.Fatal("the report is a <pre> block")
	}
	sum, runs := strings.Index(page, `id="summary"`), strings.Index(page, `<table class="runs"`)
	if sum < 0 || runs < 0 || sum > runs {
		t.Fatalf("summary at %d, runs table at %d: want the summary first", sum, runs)
	}
	for _, want := range []string{
		`<table class="lost"`, `<table class="mechanism"`, `id="sweep-chart"`, `id="l3-worth-chart"`, `id="hints-worth"`,
		"hints are worth 5.3 GiB of L3", // off costs 1,000 at 8 GiB, 850 at 16; the best saves 100 at 8: 8 × 100/150
		"<th>of clairvoyant bound</th><th>of hint-reachable bound</th>",
		"this row has keep pin on next turn, today&#39;s + affinity not; none of it changed a prefill token",
		"after ai-dynamo/dynamo", "hand &lt;trace&gt;", "--affinity-bucket",
		"<td class=\"n\">300</td>", // mechanism: retention
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Every legend entry is the row's full name.
	legends := regexp.MustCompile(`(?s)<ul class="legend">(.*?)</ul>`).FindAllStringSubmatch(page, -1)
	if len(legends) != 4 || !strings.Contains(legends[0][1], "</svg> "+strings.ReplaceAll(long, "'", "&#39;")+"</li>") {
		t.Fatalf("%d legends; first: %.300s", len(legends), legends[0][1])
	}
	// Each row (7 per point) shows both bounds: 13 cells, a percentage or – in each.
	rows := regexp.MustCompile(`(?s)<table class="runs">.*?</table>`).FindAllString(page, -1)
	if len(rows) != 2 || strings.Count(rows[0], "<tr class=") != 6 {
		t.Fatalf("%d runs tables, %d rows in the first", len(rows), strings.Count(rows[0], "<tr class="))
	}
	for _, s := range regexp.MustCompile(`(?s)<svg xmlns.*?</svg>`).FindAllString(page, -1) {
		if err := xml.Unmarshal([]byte(s), new(struct{})); err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
	if regexp.MustCompile(`(?i)(src|href|url)\s*[=(]\s*["']?(https?:)?//`).MatchString(page) || strings.Contains(page, "<script") ||
		strings.Contains(page, "@import") || strings.Contains(page, "<link") {
		t.Fatal("the report loads something")
	}
}

// --json keeps every field it had and adds the new ones.
func TestJSONFieldsOnlyAdded(t *testing.T) {
	p := handPoint(8<<30, row("today's", simulate.Policy{}, 950))
	rep := &Report{Source: "hand", Points: []Point{p}}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Points []struct {
			Runs []map[string]json.RawMessage `json:"runs"`
		} `json:"points"`
	}
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	r := v.Points[0].Runs[1]
	for _, k := range []string{"name", "kind", "cost", "saving", "saving_share", "of_bound", "of_oracle", "device_hit_tokens",
		"l3_hit_tokens", "recomputed_tokens", "prefetches", "prefetched_bytes", "wasted_prefetch_bytes", "pins", "renewals",
		"elapsed_s", "of_reachable", "policy"} {
		if _, ok := r[k]; !ok {
			t.Errorf("run lacks %q: %s", k, b.String())
		}
	}
	if k := string(v.Points[0].Runs[len(v.Points[0].Runs)-1]["kind"]); k != `"reachable"` {
		t.Errorf("last row kind %s, want the reachable bound", k)
	}
}

func TestSelectPolicies(t *testing.T) {
	ps, err := SelectPolicies("today's + affinity, ARC L3 eviction")
	if err != nil || len(ps) != 2 || ps[0].Name != "today's + affinity" || ps[1].Peer == nil {
		t.Fatalf("select: %v %+v", err, ps)
	}
	if _, err := SelectPolicies("today's,nope"); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), `--policies: no policy "nope"`) {
		t.Fatalf("unknown policy: %v", err)
	}
}
