package simulate

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// Defaults of Config.
const (
	DefaultAlpha        = 0.25
	DefaultDeviceBlocks = cluster.DefaultDeviceBlocks // 1024
	DefaultL3Blocks     = cluster.DefaultL3Blocks     // 6144
	DefaultHintTimeout  = 30 * time.Second
)

// ErrConfig marks an unusable Config.
var ErrConfig = errors.New("simulate: invalid config")

// Mode is one of the runs.
type Mode string

// The runs, in the order Run plays them.
const (
	ModeNoHints Mode = "no hints"
	// ModeOracle is the next-turn oracle: perfect knowledge of each
	// conversation's next request acting through hintstream's own
	// triggers and worker choice (oracle.go). It is not an upper bound.
	ModeOracle     Mode = "next-turn oracle"
	ModeHintstream Mode = "hintstream"
	// ModeBound is the clairvoyant bound (bound.go): no run can cost less.
	ModeBound Mode = "clairvoyant bound"
	// ModeReachable is the hint-reachable bound (reachable.go).
	ModeReachable Mode = "hint-reachable bound"
)

// ErrBoundBeaten reports a run that cost less than the clairvoyant bound:
// a bug in the bound or in the simulation, never a result.
var ErrBoundBeaten = errors.New("simulate: a run beat the clairvoyant bound")

// Config describes a comparison. Zero fields take the defaults.
type Config struct {
	// Workload to play (required): see workload.LoadTrace and
	// workload.Generate.
	Workload *workload.Workload
	// Workers (default 4), DeviceBlocks per worker (default 1024) and
	// L3Blocks (default 6144) size the cluster, in 512-token blocks for a
	// Mooncake trace.
	Workers, DeviceBlocks, L3Blocks int
	// Alpha is the prefill cost of a token loaded from L3 relative to a
	// recomputed one (default 0.25; see the package documentation).
	Alpha float64
	// AnnounceToolTime puts each tool call's true tool time in
	// x-dynamo-experimental-sim-tool-call; off by default, so hintstream
	// must learn tool times as it would in production.
	AnnounceToolTime bool
	// TransferTime makes an L3 → device load of t tokens take t ×
	// KVBytesPerToken ÷ L3Bandwidth (defaults schemas.DefaultKVBytesPerToken
	// and schemas.DefaultL3Bandwidth, the service's own): a
	// prefetch helps only with the part loaded when its turn arrives. Off:
	// prefetches land at once.
	TransferTime    bool
	KVBytesPerToken int
	L3Bandwidth     float64
	// Affinity makes the simulated frontend pass each turn's preferred
	// worker to the router, which then takes it (Dynamo's pinned worker;
	// see client/affinity.go): for hintstream, the worker its wake-up's
	// prefetch went to, read with client.Affinity.PreferredWorker from
	// the instance's affinity bucket; for the next-turn oracle, the worker
	// its prefetch went to. Off: the router chooses freely.
	Affinity bool
	// Hintstream starts Run's hintstream run (ModeHintstream): a real
	// service on a real bus, which the simulator does not link
	// (loadtest/value supplies it). Nil: Run fails with ErrConfig.
	Hintstream StartFunc
	// HintTimeout bounds the wait for hintstream to finish one event
	// (default 30s); reaching it fails the run.
	HintTimeout time.Duration
	Logger      *slog.Logger // default: discard
	// Progress, when set, is called now and then during each run with
	// the events it played since its last call (each run plays every
	// event of the workload once). Simulate's runs call it concurrently.
	Progress func(events int)
	// TimePoints is how many even steps of the workload's time Simulate's
	// saving-over-time series (ModeResult.SavingOverTime) has; 0: none.
	TimePoints int
	// IDs, when set, reads request i's block ids back from where the
	// workload came from (a trace file): the workload's requests then hold
	// none (HashIDs nil), and Simulate sets a request's ids just before
	// they are needed (the bound's pass; its first event, or its previous
	// turn's response, which takes its output from them) and drops them
	// once every run has played its response. Memory then holds the ids of
	// the requests in flight, not the trace's. Simulate calls it from one
	// goroutine at a time.
	IDs func(i int) ([]uint64, error)
	// TempDir is where the bound's tape and spills go while they are
	// used ("": the system's temporary directory).
	TempDir string
	// stretch is the events Simulate plays between its pauses (0:
	// simulateStretch). A test sets a short one to cross several
	// stretches on a workload small enough for the race detector.
	stretch int
}

func (c Config) withDefaults() (Config, error) {
	if c.Workload == nil || c.Workload.Len() == 0 {
		return c, fmt.Errorf("%w: no workload", ErrConfig)
	}
	if c.Workers <= 0 {
		c.Workers = cluster.DefaultWorkers
	}
	if c.DeviceBlocks <= 0 {
		c.DeviceBlocks = DefaultDeviceBlocks
	}
	if c.L3Blocks <= 0 {
		c.L3Blocks = DefaultL3Blocks
	}
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if math.IsNaN(c.Alpha) || c.Alpha < 0 || c.Alpha > 1 {
		return c, fmt.Errorf("%w: alpha %v (want 0..1)", ErrConfig, c.Alpha)
	}
	if c.KVBytesPerToken <= 0 {
		c.KVBytesPerToken = schemas.DefaultKVBytesPerToken
	}
	if c.L3Bandwidth == 0 {
		c.L3Bandwidth = schemas.DefaultL3Bandwidth
	}
	if math.IsNaN(c.L3Bandwidth) || math.IsInf(c.L3Bandwidth, 0) || c.L3Bandwidth < 0 {
		return c, fmt.Errorf("%w: L3 bandwidth %v bytes/s", ErrConfig, c.L3Bandwidth)
	}
	if c.HintTimeout <= 0 {
		c.HintTimeout = DefaultHintTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// ModeResult is what one run measured.
type ModeResult struct {
	Mode     Mode
	Requests int
	// Prompt tokens by where they came from.
	PromptTokens, DeviceHitTokens, L3HitTokens, RecomputedTokens int64
	// UnreadyTokens were on the device but still loading when their turn
	// came (transfer time only).
	UnreadyTokens int64
	// Cost is RecomputedTokens + Alpha*L3HitTokens + WarmupCost; Saving
	// is the no-hints run's Cost minus this one's.
	Cost, Saving float64
	// Warmups are speculative prefills played (a peer's; peer_run.go),
	// WarmupTokens the tokens they recomputed and WarmupCost their prefill
	// cost (recomputed + Alpha × loaded from L3), in Cost: not in the
	// prompt token counts above, which are the turns'.
	Warmups      int
	WarmupTokens int64
	WarmupCost   float64
	// Wakeups played; Prefetches applied by workers, PrefetchedBlocks
	// they loaded from L3, PrefetchAccurate those whose request was then
	// routed to the prefetching worker.
	Wakeups, Prefetches, PrefetchAccurate int
	PrefetchedBlocks                      int64
	// PrefetchAccuracy is PrefetchAccurate / Prefetches (NaN without any).
	PrefetchAccuracy float64
	// Pinned counts requests routed to their preferred worker (affinity).
	Pinned int
	// SelectionAgreement (hintstream only) counts prefetches sent to the
	// worker the router model picked at the wake-up, from the same state.
	SelectionAgreement int
	// Pins and Releases are pin actions applied by the L3 store, and
	// Renewals (hintstream only) the pins that renewed a slot's pin.
	Pins, Releases, Renewals int
	// Retains are hintstream.retain actions a worker applied (run
	// --retain-on-worker): its device kept the turn's blocks.
	Retains int `json:",omitempty"`
	L3      cluster.L3Stats
	// PinsHonoured is the share of (slot, page) pins not broken by an
	// eviction (NaN without pins).
	PinsHonoured    float64
	DeviceEvictions int64
	// WastedPrefetchBlocks are blocks a prefetch loaded that its turn did
	// not use (routed elsewhere, evicted, or never came).
	WastedPrefetchBlocks int64
	// Hint delivery (hintstream only): envelopes dropped as duplicates,
	// undecodable, or prefetches past expires_at_ms.
	DuplicateHints, BadHints, ExpiredPrefetches int
	// Counters are the hintstream instance's counters at the end.
	Counters map[string]uint64
	Elapsed  time.Duration
	// PerRequestCost is each request's prefill cost, for the lost-savings
	// breakdown.
	PerRequestCost []float64 `json:"-"`
	// causes and extent are per request: what went wrong with its
	// prefetch, and how many leading blocks its worker held after it.
	causes []cause
	extent []int
	// served is what each request found (mechanism.go).
	served []servedInfo
	// prefetchedTo is where each prefetched request's prefetch went.
	prefetchedTo map[int]int
	// Lost is the saving missed against the bound, by cause (hint runs).
	Lost Lost
	// Mechanism is the run's lost saving against the clairvoyant bound by
	// mechanism (Simulate's policy runs; nil elsewhere).
	Mechanism *Mechanism
	// Placed is, on the hint-reachable bound, the part of its saving
	// that placing announced turns adds (Alpha a kept page on such a
	// turn): Saving − Placed is what keeping L3 pages alone reaches.
	Placed float64
	// SavingOverTime is the saving so far at Config.TimePoints even steps
	// (Simulate; PerRequestCost is not kept there).
	SavingOverTime []SavingPoint
}

// Result is the comparison.
type Result struct {
	Workload                        workload.Stats
	Workers, DeviceBlocks, L3Blocks int
	BlockSize                       int
	Alpha                           float64
	AnnounceToolTime                bool
	Affinity                        bool
	// TransferTime, KVBytesPerToken and L3Bandwidth as configured.
	TransferTime                bool
	KVBytesPerToken             int
	L3Bandwidth                 float64
	NoHints, Hintstream, Oracle ModeResult
	// Bound is the clairvoyant bound on the same workload and capacities.
	Bound ModeResult
	// Reachable is the hint-reachable bound (reachable.go); OfReachable
	// is saving(hintstream) / saving(Reachable); ReachableBeaten names
	// the runs that cost less than it (possible with affinity, see
	// reachable.go).
	Reachable       ModeResult
	OfReachable     float64
	ReachableBeaten []Mode
	// Links are the workload's next-turn links.
	Links workload.LinkStats
	// Mechanism is hintstream's lost saving against the clairvoyant
	// bound by mechanism (mechanism.go).
	Mechanism Mechanism
	// OfBound is saving(hintstream) / saving(bound): the share of what is
	// possible hintstream gets (NaN when the bound saves nothing).
	OfBound float64
	// Recovered is (cost_nohints - cost_hintstream) / (cost_nohints -
	// cost_oracle): the share of the next-turn oracle's saving hintstream
	// gets (NaN when the oracle saves nothing). It can pass 100%: the
	// oracle is not a bound.
	Recovered float64
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}
