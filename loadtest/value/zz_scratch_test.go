package value

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hintstream/hintstream/loadtest/sim"
	"github.com/hintstream/hintstream/loadtest/workload"
	"github.com/hintstream/hintstream/retention"
)

type directPlanner struct {
	noHints
	p     *player
	pl    *retention.Planner
	epoch time.Time
}

func (d *directPlanner) request(_ context.Context, i, _ int) error {
	pr, err := d.p.pr.get(i)
	if err != nil {
		return err
	}
	at := d.epoch.Add(d.p.cl.Now())
	d.pl.Request(at, d.p.w.Requests[i].Session, pr.Keys, d.p.w.BlockSize)
	for _, pin := range d.pl.Plan(at) {
		d.p.cl.L3.Pin(pin.Slot, pin.Keys, pin.TTL, d.p.cl.Now())
	}
	return nil
}

func envF(k string, f *float64) {
	if v := os.Getenv(k); v != "" {
		fmt.Sscan(v, f)
	}
}

func TestScratchPlanner(t *testing.T) {
	w, err := workload.LoadTrace(tracePath(t), workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := Config{Workload: w, TransferTime: true}.withDefaults()
	pr, _ := newPrompts(cfg)
	base, err := runMode(context.Background(), cfg, pr, ModeNoHints)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := boundMode(cfg, pr)
	rc := plannerConfig(cfg)
	envF("SHARE", &rc.BudgetShare)
	envF("MINP", &rc.MinProbability)
	if v := os.Getenv("HORIZON"); v != "" {
		rc.Horizon, _ = time.ParseDuration(v)
	}
	pl, err := retention.New(*rc)
	if err != nil {
		t.Fatal(err)
	}
	n := len(w.Requests)
	p := &player{cfg: cfg, w: w, pr: pr, res: ModeResult{PerRequestCost: make([]float64, n), causes: make([]cause, n), extent: make([]int, n)},
		routed: make([]int, n), prefetchedTo: map[int]int{}, extent: map[int]int{}, served: make([]servedInfo, n)}
	p.cl, _ = sim.NewCluster(clusterConfig(cfg))
	if err := p.play(context.Background(), &directPlanner{p: p, pl: pl, epoch: time.Unix(1e9, 0)}); err != nil {
		t.Fatal(err)
	}
	p.summarise()
	t.Logf("none %.0f planner %.0f bound %.0f: planner saves %.2f%% of bound; stats %+v", base.Cost, p.res.Cost, b.Cost,
		100*(base.Cost-p.res.Cost)/(base.Cost-b.Cost), pl.Stats())
}

// Reuse anatomy: for each page access, its prior sightings and gap.
func TestScratchAnatomy(t *testing.T) {
	w, _ := workload.LoadTrace(tracePath(t), workload.TraceOptions{})
	cfg, _ := Config{Workload: w}.withDefaults()
	pr, _ := newPrompts(cfg)
	seen := map[uint64]int{}
	last := map[uint64]time.Duration{}
	hist := map[string]int{}
	for i := range w.Requests {
		p, _ := pr.get(i)
		for d, h := range p.Seq {
			k := seen[h]
			g := w.Requests[i].At - last[h]
			gb := "new"
			if k > 0 {
				switch {
				case g < 10*time.Second:
					gb = "<10s"
				case g < 80*time.Second:
					gb = "<80s"
				case g < 300*time.Second:
					gb = "<300s"
				default:
					gb = ">300s"
				}
			}
			kb := min(k, 3)
			db := "deep"
			if d < 4 {
				db = "d<4"
			}
			hist[fmt.Sprintf("prior=%d gap=%s %s", kb, gb, db)]++
			seen[h]++
			last[h] = w.Requests[i].At
		}
	}
	for k, v := range hist {
		t.Log(k, v)
	}
}
