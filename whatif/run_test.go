package whatif

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/race"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// slice is the trace's requests 3775..3974: the stretch with the most
// conversations (14 next turns within 32 s of their previous turn).
func slice(t *testing.T) Source {
	t.Helper()
	f, err := os.Open(tracePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := workload.ReadRecords(f, DefaultBlockSize, false)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: "slice", Records: tr.Records[3775:3975]}
}

func small() Cluster {
	c := DefaultCluster()
	c.DeviceBlocks = 512
	c.L3Bytes = 1024 * int64(c.BlockSize) * int64(c.KVBytesPerToken)
	return c
}

// A sweep over L3 capacity runs every policy at each point; the bound's
// cost never grows with more L3, no run beats it, and every report form
// holds the runs.
func TestSweepOverL3(t *testing.T) {
	sw, err := ParseSweep("l3=9GiB,72GiB,576GiB")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var bar bytes.Buffer
	policies, peers := append(simulate.Policies(), simulate.Peers()...), 4
	if race.Enabled { // every row runs without -race (make test's sim pass)
		policies, peers = racePolicies(t), 1
	}
	rep, err := Run(ctx, slice(t), Options{Cluster: small(), Sweep: &sw, Progress: &bar, Policies: policies})
	if err != nil {
		t.Fatal(err)
	}
	// Pages of 512 tokens × 147,456 bytes: 72 MiB.
	if len(rep.Points) != 3 || rep.Points[0].L3Pages != 128 || rep.Points[2].L3Pages != 8192 {
		t.Fatalf("points %d, L3 pages %d..%d", len(rep.Points), rep.Points[0].L3Pages, rep.Points[len(rep.Points)-1].L3Pages)
	}
	prevCost := -1.0
	want := 1 + len(policies) + 2 // off, every policy and peer, oracle, bound
	for _, p := range rep.Points {
		if len(p.Runs) < want || p.Runs[0].Kind != "off" || p.Runs[want-1].Kind != "bound" || p.Runs[want-2].Kind != "oracle" {
			t.Fatalf("%s: %d runs", p.Label, len(p.Runs))
		}
		played := 0
		for _, r := range p.Runs {
			if r.Kind == "peer" {
				played++
				if r.Source == "" {
					t.Fatalf("%s: peer %q cites nothing", p.Label, r.Name)
				}
			}
		}
		if played != peers || p.Summary == nil || p.Summary.BestPeer == "" || len(p.Summary.RunFlags) == 0 {
			t.Fatalf("%s: %d peers, want %d; summary %+v", p.Label, played, peers, p.Summary)
		}
		bound := p.Runs[want-1].Saving
		if c := p.Runs[want-1].Cost; prevCost >= 0 && c > prevCost {
			t.Fatalf("%s: the bound costs %v, more than %v with less L3", p.Label, c, prevCost)
		}
		prevCost = p.Runs[want-1].Cost
		for _, r := range p.Runs[:want-1] {
			if r.Saving > bound {
				t.Fatalf("%s: %s saves %v, beyond the bound's %v", p.Label, r.Name, r.Saving, bound)
			}
			if r.Kind == "policy" && (r.Lost == nil || r.Lost.Total < 0 || len(r.SavingOverTime) != DefaultTimePoints) {
				t.Fatalf("%s: %s lost %+v, %d time points", p.Label, r.Name, r.Lost, len(r.SavingOverTime))
			}
		}
		// 18 next turns on this slice: 14 continuations and 4 forks (whatif/workload links forks).
		if today := p.Runs[1]; today.Name != "today's" || today.Prefetches != 18 || today.Saving <= 0 {
			t.Fatalf("%s: today's policy: %+v", p.Label, today)
		}
	}
	if !strings.Contains(bar.String(), "ETA") || !strings.Contains(bar.String(), "done in") {
		t.Fatalf("progress bar: %q", bar.String())
	}

	var text bytes.Buffer
	if err := rep.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"prefill saved against L3 capacity", "clairvoyant bound", "next-turn oracle", "pin lapsed", "requests a second"} {
		if !strings.Contains(text.String(), want) {
			t.Fatalf("terminal report lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Points) != 3 || back.Points[1].Runs[1].Saving != rep.Points[1].Runs[1].Saving {
		t.Fatalf("JSON round trip: %v", err)
	}

	dir := t.TempDir()
	if err := rep.WriteHTML(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	svgs := regexp.MustCompile(`(?s)<svg xmlns.*?</svg>`).FindAll(page, -1)
	if len(svgs) != 4 {
		t.Fatalf("%d SVG charts, want 4 (over time, lost by cause, sweep, L3 worth)", len(svgs))
	}
	for _, s := range svgs {
		if err := xml.Unmarshal(s, new(struct{})); err != nil {
			t.Fatalf("chart is not well-formed XML: %v", err)
		}
	}
	if regexp.MustCompile(`(?i)(src|href)=["']?(https?:)?//`).Match(page) || strings.Contains(string(page), "<script") {
		t.Fatal("the report loads something from the network")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	for _, s := range []string{"l3", "l3=", "disk=1GiB", "l3=1XB", "device=0", "bandwidth=-1GB/s"} {
		if _, err := ParseSweep(s); !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("sweep %q: %v", s, err)
		}
	}
	for _, c := range []func(*Cluster){
		func(c *Cluster) { c.Workers = 0 }, func(c *Cluster) { c.Alpha = 0 }, func(c *Cluster) { c.Alpha = 1.5 },
		func(c *Cluster) { c.L3Bytes = 1 << 20 }, func(c *Cluster) { c.DeviceBlocks = -1 }, func(c *Cluster) { c.KVBytesPerToken = 0 },
	} {
		cl := DefaultCluster()
		c(&cl)
		if err := cl.Validate(); !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("%+v: %v", cl, err)
		}
	}
	if DefaultCluster().L3Pages() != 6144 {
		t.Fatalf("default L3 %d pages, want the hint-value harness's 6144", DefaultCluster().L3Pages())
	}
	if _, err := Run(context.Background(), Source{Name: "nothing"}, Options{Cluster: DefaultCluster()}); !errors.Is(err, workload.ErrNoRequests) {
		t.Fatalf("no records: %v", err)
	}
}
