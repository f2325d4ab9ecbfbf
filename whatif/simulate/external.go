package simulate

import (
	"context"

	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// StartFunc starts a run played by something outside the simulator: the
// real hintstream service on an embedded bus (loadtest/value), which the
// simulator does not link so that `hintstream whatif` carries no test
// harness. It must give the run its cluster (Player.SetCluster) before
// it returns. A StartFunc that fails may return non-nil Hooks to be
// closed.
type StartFunc func(ctx context.Context, p *Player) (Hooks, error)

// Hooks is what an outside run adds to the common play: the hints, and
// with affinity on the worker the frontend passes to the router. Each is
// called at the simulated time of its event.
type Hooks interface {
	Wakeup(ctx context.Context, i int) error
	// Preferred is the worker request i is pinned to, if any.
	Preferred(ctx context.Context, i int) (worker int, ok bool, err error)
	// Request is called as request i arrives, before it is served.
	Request(ctx context.Context, i int) error
	Response(ctx context.Context, i, worker int) error
	// Finish adds the run's own figures to its result.
	Finish(res *ModeResult)
	Close()
}

// external adapts Hooks to the player's hooks.
type external struct{ h Hooks }

func (e external) wakeup(ctx context.Context, i int) error { return e.h.Wakeup(ctx, i) }
func (e external) preferred(ctx context.Context, i int) (int, bool, error) {
	return e.h.Preferred(ctx, i)
}
func (e external) request(ctx context.Context, i int) error { return e.h.Request(ctx, i) }
func (e external) response(ctx context.Context, i, worker int) error {
	return e.h.Response(ctx, i, worker)
}
func (e external) finish(res *ModeResult) { e.h.Finish(res) }
func (e external) close()                 { e.h.Close() }

// Player is one run's state as an outside run sees it.
type Player struct{ p *player }

// Config is the run's configuration, defaults filled in.
func (p *Player) Config() Config { return p.p.cfg }

// Workload is the workload being played.
func (p *Player) Workload() *workload.Workload { return p.p.w }

// ClusterConfig is the cluster every run starts from; an outside run
// adds its endpoints and sink and passes the cluster to SetCluster.
func (p *Player) ClusterConfig() cluster.Config { return clusterConfig(p.p.cfg) }

// Cluster is the run's simulated cluster.
func (p *Player) Cluster() *cluster.Cluster { return p.p.cl }

// SetCluster gives the run its cluster.
func (p *Player) SetCluster(c *cluster.Cluster) { p.p.cl = c }

// Result is the run's result so far, for the outside run's own counts
// (bad, duplicate, expired hints; pins and releases).
func (p *Player) Result() *ModeResult { return &p.p.res }

// Prompt is request i's prompt with its tokens.
func (p *Player) Prompt(i int) (*cluster.Prompt, error) { return p.p.pr.get(i) }

// Arriving is the prompt of request i, made once for its Request hook
// and its serving.
func (p *Player) Arriving(i int) (*cluster.Prompt, error) { return p.p.prompt(i) }

// Prefetch applies a prefetch of request i's prompt pr on worker wk, as
// the worker's scheduler does with a kv.prefetch hint.
func (p *Player) Prefetch(i, wk int, pr *cluster.Prompt) error { return p.p.prefetch(i, wk, pr) }
