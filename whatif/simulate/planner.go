package simulate

import (
	"context"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/retention"
)

// plannerConfig is the retention planner of a run: the store's capacity
// is the run's L3 in bytes (pages × tokens × KV bytes per token), the
// budget Config.L3PinBudget, or (0) the planner's default share of it,
// as `hintstream run --l3-capacity C` without a byte --l3-pin-budget.
func plannerConfig(cfg Config) *retention.Config {
	bs := cfg.Workload.BlockSize
	return &retention.Config{Capacity: int64(cfg.L3Blocks) * int64(bs) * int64(cfg.KVBytesPerToken),
		Budget: cfg.L3PinBudget, KVBytesPerToken: cfg.KVBytesPerToken}
}

// plannerRun is the retention planner of a policy run, fed as the
// service's observer feeds it (service/retention_planner.go): every
// turn's pages and every tool call, on the events' clock, a plan made
// inside the turn that crosses an interval. Its pin actions go straight
// to the run's L3 store at the simulated time, as the Mooncake master
// applies them; nothing is lost or late in process.
type plannerRun struct {
	h  *engineRun
	pl *retention.Planner
}

func newPlannerRun(h *engineRun) (*plannerRun, error) {
	pl, err := retention.New(*plannerConfig(h.p.cfg))
	if err != nil {
		return nil, err
	}
	return &plannerRun{h: h, pl: pl}, nil
}

// ObserveRequest records the turn's pages and plans. The pages are the
// arriving prompt's store keys (the layout's, which the service computes
// from the worker records with actions.ObjectKeys).
func (o *plannerRun) ObserveRequest(_ context.Context, r engine.ObservedRequest) {
	if r.Wakeup {
		return
	}
	at, req, p := r.At, r.Event, o.h.p
	var keys []string
	if p.arriving != nil && p.w.Req(p.arrivingReq).ID == req.RequestID {
		keys = p.arriving.Keys
	} else if k, err := actions.ObjectKeys(p.cl.Config().Layout, req.TokenIDs); err == nil {
		keys = k
	}
	if len(keys) > 0 {
		o.pl.Request(at, req.SessionID, keys, p.w.BlockSize)
	}
	o.plan(at)
}

// ObserveResponse records a tool call with its class's learned time,
// from the engine's pins' learner, as the service does.
func (o *plannerRun) ObserveResponse(_ context.Context, r engine.ObservedResponse) {
	at, resp := r.At, r.Event
	if resp.FinishReason != "tool_calls" && len(resp.ToolCalls) == 0 {
		return
	}
	tools := make([]string, 0, len(resp.ToolCalls))
	for _, tc := range resp.ToolCalls {
		tools = append(tools, tc.Name)
	}
	var expected time.Duration
	if pp := o.h.eng.Pins(); pp != nil && pp.Learner != nil {
		expected, _ = pp.Learner.Expected(tools)
	}
	o.pl.ToolCall(at, resp.SessionID, expected)
}

// plan applies the planner's pin actions, if a plan is due at at.
func (o *plannerRun) plan(at time.Time) {
	p := o.h.p
	now := p.cl.Now()
	for _, pin := range o.pl.Plan(at) {
		p.cl.L3.Pin(pin.Slot, pin.Keys, pin.TTL, now) // TTL 0: a release
		if pin.TTL > 0 {
			p.res.PlannerPins++
		}
	}
}
