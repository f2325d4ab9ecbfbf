package whatif

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// DefaultTimePoints is how many points the saving-over-time series has.
const DefaultTimePoints = 60

// Source is the traffic to play: checked records in time order.
type Source struct {
	// Name says where they came from (a file, or a stream window).
	Name    string
	Records []workload.Record
	// Skipped counts input passed over as bad; FirstSkipped is the first.
	Skipped      int
	FirstSkipped *workload.LineError
	// Model names the requests' model ("" for a trace).
	Model string
	// Observed is the cluster's own device hits on these requests (a
	// stream window; nil for a trace).
	Observed *Observed
	// IDs, when set, reads record i's block ids back from the source
	// (SpoolTrace sets it): Run then keeps none after linking the turns,
	// and the play reads each request's when it comes (simulate.Config.IDs).
	IDs func(i int) ([]uint64, error)
	// Workload, when set, is the traffic already built from the source
	// (SpoolTrace: kept on disk, read back as the play goes), with
	// Reusable its reusable share; Records is then not used. The caller
	// closes it.
	Workload *workload.Workload
	Reusable float64
}

// Options configure Run.
type Options struct {
	Cluster Cluster
	// Policies to run; nil: every policy hintstream has and the peers
	// (simulate.Policies, then simulate.Peers): the report answers "why
	// hintstream, and not what I run already".
	Policies []simulate.Policy
	// Sweep, when set, runs every policy at each of its points.
	Sweep *Sweep
	// Progress, when set, gets a progress bar with an ETA (a terminal).
	Progress io.Writer
	Logger   *slog.Logger
	// TimePoints of the saving-over-time series; default DefaultTimePoints.
	TimePoints int
	// Signals announce next turns where the records give the turns'
	// finish (records only: a Source's Workload was built with its own).
	Signals workload.Signals
	// TempDir is where the bound's tape and per-request spills go while
	// the play uses them ("": the system's temporary directory).
	TempDir string
}

// Run plays src on the cluster model (at each sweep point): without
// hints, with every policy through hintstream's decision engine on a
// simulated clock, with the next-turn oracle, and computes the
// clairvoyant bound.
func Run(ctx context.Context, src Source, o Options) (*Report, error) {
	if len(src.Records) == 0 && (src.Workload == nil || src.Workload.Len() == 0) {
		return nil, fmt.Errorf("%w: %s holds no request", workload.ErrNoRequests, src.Name)
	}
	if err := o.Cluster.Validate(); err != nil {
		return nil, err
	}
	if o.Policies == nil {
		o.Policies = append(simulate.Policies(), simulate.Peers()...)
	}
	if o.TimePoints <= 0 {
		o.TimePoints = DefaultTimePoints
	}
	start := time.Now()
	w, reusable := src.Workload, src.Reusable
	if w == nil {
		reusable = ReusableShare(src.Records, o.Cluster.BlockSize)
		var err error
		if w, err = workload.FromRecords(src.Records, workload.TraceOptions{BlockSize: o.Cluster.BlockSize, Model: src.Model, Signals: o.Signals}); err != nil {
			return nil, err
		}
		// The workload holds what the play needs of the records (their
		// ids too, until the last point's play drops each once played);
		// this copy of the list would keep every record to the end.
		src.Records = nil
		if src.IDs != nil {
			// Read back from the source as the play needs them (one
			// point at a time, a stretch of events at a time).
			for i := range w.Requests {
				w.Requests[i].HashIDs = nil
			}
		}
	}
	stats := w.Stats()
	rep := &Report{Source: src.Name, Requests: stats.Requests, Conversations: stats.Sessions, NextTurns: stats.NextTurns,
		PromptTokens: stats.PromptTokens, DurationS: stats.Duration.Seconds(), Skipped: src.Skipped,
		Reusable: Num(reusable), Cluster: o.Cluster, Sweep: o.Sweep,
		Observed: src.Observed, Signals: signalsOf(w, stats)}
	if src.FirstSkipped != nil {
		rep.FirstSkipped = src.FirstSkipped.Error()
	}
	points := []Cluster{o.Cluster}
	labels := []string{""}
	if o.Sweep != nil {
		points, labels = nil, nil
		for i := range o.Sweep.Values {
			points = append(points, o.Sweep.apply(o.Cluster, i))
			labels = append(labels, o.Sweep.Dim+"="+o.Sweep.Labels[i])
		}
	}
	for _, c := range points {
		if err := c.Validate(); err != nil {
			return nil, err
		}
	}
	bar := newProgress(o.Progress, len(points)*(len(o.Policies)+2)*w.NumEvents())
	for k, c := range points {
		cfg := simulate.Config{Workload: w, Workers: c.Workers, DeviceBlocks: c.DeviceBlocks, L3Blocks: c.L3Pages(),
			Alpha: c.Alpha, TransferTime: c.L3Bandwidth > 0, KVBytesPerToken: c.KVBytesPerToken, L3Bandwidth: c.L3Bandwidth,
			Logger: o.Logger, Progress: bar.add, TimePoints: o.TimePoints, IDs: src.IDs, TempDir: o.TempDir}
		s, err := simulate.Simulate(ctx, cfg, o.Policies)
		if err != nil {
			return nil, err
		}
		pt := point(labels[k], c, s, o.Policies)
		pt.annotate()
		pt.summarise()
		rep.Points = append(rep.Points, pt)
	}
	rep.hintsWorth()
	bar.finish()
	rep.ElapsedS = time.Since(start).Seconds()
	rep.RequestsPerS = float64(len(points)*rep.Requests) / rep.ElapsedS
	return rep, nil
}

// ReusableShare is the share of prompt tokens a cluster with unbounded
// caches would not recompute: each request's leading full blocks whose
// ids an earlier request held (Mooncake's "Cache Ratio"). Memory is the
// set of distinct ids.
func ReusableShare(recs []workload.Record, blockSize int) float64 {
	c := newReuseCounter(blockSize)
	for _, r := range recs {
		c.add(r)
	}
	return c.share()
}

// reuseCounter counts ReusableShare one record at a time.
type reuseCounter struct {
	blockSize     int
	seen          map[uint64]struct{}
	reused, total int64
}

func newReuseCounter(blockSize int) *reuseCounter {
	return &reuseCounter{blockSize: blockSize, seen: map[uint64]struct{}{}}
}

func (c *reuseCounter) add(r workload.Record) {
	c.total += int64(r.InputLength)
	full := min(r.InputLength/c.blockSize, len(r.HashIDs))
	k := 0
	for k < full {
		if _, ok := c.seen[r.HashIDs[k]]; !ok {
			break
		}
		k++
	}
	c.reused += int64(k * c.blockSize)
	for _, h := range r.HashIDs {
		c.seen[h] = struct{}{}
	}
}

func (c *reuseCounter) share() float64 {
	if c.total == 0 {
		return math.NaN()
	}
	return float64(c.reused) / float64(c.total)
}

// point summarises one sweep point's simulation (policies: the
// policies played, in the order of s.Policies).
func point(label string, c Cluster, s simulate.Simulation, policies []simulate.Policy) Point {
	p := Point{Label: label, Cluster: c, L3Pages: c.L3Pages(), HeldPrompts: s.HeldPrompts}
	bytesPerBlock := float64(c.BlockSize) * float64(c.KVBytesPerToken)
	// The reachable bound's saving, whether or not the simulator set it.
	reach := math.NaN()
	if s.Reachable.PromptTokens > 0 {
		reach = s.NoHints.Cost - s.Reachable.Cost
	}
	add := func(kind string, m simulate.ModeResult, lost bool) *RunResult {
		r := RunResult{Name: string(m.Mode), Kind: kind, Cost: m.Cost, Saving: m.Saving,
			SavingShare: Num(ratio(m.Saving, float64(m.PromptTokens))), OfBound: Num(ratio(m.Saving, s.Bound.Saving)),
			OfOracle: Num(ratio(m.Saving, s.Oracle.Saving)), OfReachable: Num(ratio(m.Saving, reach)),
			DeviceHitTokens: m.DeviceHitTokens, L3HitTokens: m.L3HitTokens,
			RecomputedTokens: m.RecomputedTokens, Prefetches: m.Prefetches,
			PrefetchedBytes:     float64(m.PrefetchedBlocks) * bytesPerBlock,
			WastedPrefetchBytes: float64(m.WastedPrefetchBlocks) * bytesPerBlock, Pins: m.Pins, Renewals: m.Renewals, ElapsedS: m.Elapsed.Seconds()}
		if lost {
			l := m.Lost
			r.Lost = &l
		}
		if mm := m.Mechanism; mm != nil {
			r.Mechanism = &Mechanism{Retention: mm.Retention, Placement: mm.Placement, Timing: mm.Timing,
				WrongWorker: mm.WrongWorker, NoSignal: mm.NoSignal, Total: mm.Total}
		}
		for _, t := range m.SavingOverTime {
			r.SavingOverTime = append(r.SavingOverTime, TimePoint{AtS: t.At.Seconds(), Saving: t.Saving})
		}
		p.Runs = append(p.Runs, r)
		return &p.Runs[len(p.Runs)-1]
	}
	add("off", s.NoHints, false).Policy = &Features{}
	for i, m := range s.Policies {
		kind := "policy"
		if policies[i].Peer != nil {
			kind = "peer"
		}
		r := add(kind, m, true)
		r.Policy = features(policies[i])
		if pe := policies[i].Peer; pe != nil {
			r.Source = pe.Source
		}
	}
	add("oracle", s.Oracle, true)
	add("bound", s.Bound, false)
	if !math.IsNaN(reach) {
		r := add("reachable", s.Reachable, false)
		r.Saving = reach
		r.SavingShare = Num(ratio(reach, float64(s.Reachable.PromptTokens)))
		if r.Name == "" {
			r.Name = string(simulate.ModeReachable)
		}
	}
	return p
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
