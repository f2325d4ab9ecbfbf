package agents

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/workload"
)

// TestPredictedLeadTime measures how far ahead of tool_end the predicted
// prefetches land in the load test's synthetic sessions (log-normal tool
// times, median 5s, sigma 1; 8k-token contexts at --l3-bandwidth 10 GB/s
// and 144 KiB per token), and the early / on-time / late shares. It
// asserts only what any prediction must give: every predicted prefetch
// classified once, and most not late. The figures are in the log
// (go test -run TestPredictedLeadTime -v ./agents/).
func TestPredictedLeadTime(t *testing.T) {
	w, err := workload.Generate(workload.SyntheticConfig{Seed: 29, Sessions: 400, MinTurns: 4, MaxTurns: 12})
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Feedback = false
	tr, world, m := newTracker(t, cfg)
	ctx := context.Background()
	var leads []time.Duration
	tools := 0
	for _, r := range w.Requests {
		if !r.ToolCall || r.Next < 0 {
			continue
		}
		tools++
		program := r.Session
		world.now = time.UnixMilli(1_777_000_000_000).Add(r.At)
		req := agentReq(r.ID, "synthetic", program, false)
		req.TokenIDs = make([]uint32, r.InputLength)
		tr.ObserveRequest(req)
		world.now = time.UnixMilli(1_777_000_000_000).Add(r.ResponseAt)
		tr.ObserveResponse(&schemas.ResponseEvent{RequestID: r.ID, WorkerID: 7, OutputTokenIDs: make([]uint32, r.OutputLength)})
		start := world.now
		tr.OnRecord(ctx, toolRec(agentevents.ToolStart, "synthetic", program, r.ID, "tool", start.UnixMilli(), 0))
		end := start.Add(r.ToolTime)
		p := tr.programs["w/"+program]
		if pr := p.pred; pr != nil {
			fire := pr.fireAt
			if fire.Before(end) {
				if fire.After(world.now) {
					world.now = fire
				}
				tr.Tick()
				leads = append(leads, end.Sub(fire.Add(cfg.LoadTime(pr.tokens))))
			} else {
				leads = append(leads, end.Sub(fire.Add(cfg.LoadTime(pr.tokens))))
			}
		}
		world.now = end
		tr.OnRecord(ctx, toolRec(agentevents.ToolEnd, "synthetic", program, r.ID, "tool", start.UnixMilli(), float64(r.ToolTime.Milliseconds())))
	}
	timing := m.Timing.Values()
	n := timing[TimingEarly] + timing[TimingOnTime] + timing[TimingLate]
	if n == 0 || n != uint64(len(leads)) {
		t.Fatalf("%d predicted prefetches classified, %d predicted", n, len(leads))
	}
	slices.Sort(leads)
	q := func(f float64) time.Duration { return leads[int(f*float64(len(leads)-1))].Round(time.Millisecond) }
	share := func(k string) string { return fmt.Sprintf("%.1f%%", 100*float64(timing[k])/float64(n)) }
	t.Logf("%d tool calls, %d predicted prefetches: early %s, on time %s, late %s; lead ahead of tool_end p10 %v, median %v, p90 %v",
		tools, n, share(TimingEarly), share(TimingOnTime), share(TimingLate), q(0.1), q(0.5), q(0.9))
	if timing[TimingLate]*2 > n {
		t.Errorf("most predicted prefetches late: %v", timing)
	}
}
