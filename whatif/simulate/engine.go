package simulate

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/engine"
	hpins "github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/emit/receiver"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/cluster"
)

// Policy is one way of running hintstream's decisions in process (Simulate):
// the same engine.Decisions that `hintstream run` and `replay` take, and
// the frontend's affinity.
type Policy struct {
	Name      string
	Decisions engine.Decisions
	// NoPrefetch drops every prefetch the engine decides (pins only);
	// NoPins turns the tool-call pins off (prefetch only).
	NoPrefetch, NoPins bool
	// Affinity: the frontend passes each turn's prefetch worker to the
	// router (see Config.Affinity).
	Affinity bool
	// L3Eviction is the L3 store's eviction order: "" or L3LRU (what
	// Mooncake's master does), L3ARC.
	L3Eviction string
	// PinBudget bounds the pins by the simulated L3's capacity (`run
	// --pin-budget-tokens` set to the store's size), unless Decisions sets
	// its own PinBudgetTokens.
	PinBudget bool
	// Peer, when set, makes this a peer's policy, not hintstream's: the
	// decision engine is not run, the peer's own mechanism is (peers.go).
	Peer *Peer
}

// Policies are the hint policies hintstream has: today's defaults, each
// half alone, the two pin variants its flags select, affinity on, and
// with it the pins bounded by the store's capacity (--pin-budget-tokens).
func Policies() []Policy {
	return []Policy{
		{Name: "today's"},
		{Name: "prefetch only", NoPins: true},
		{Name: "pins only", NoPrefetch: true},
		{Name: "keep pin on next turn", Decisions: engine.Decisions{KeepPinOnNextTurn: true}},
		{Name: "no pin renewal", Decisions: engine.Decisions{NoPinRenewal: true}},
		{Name: "today's + affinity", Affinity: true},
		{Name: "today's + affinity + pin budget", Affinity: true, PinBudget: true},
	}
}

// OptInPolicies are rows whatif plays only when --policies names them:
// today's + affinity with `run --retain-on-worker` (the serving worker
// keeps a tool call's blocks for the pin's TTL). It lost on the agent
// profile at both L3 sizes (docs/retention.md) and takes twice a row's
// time (a retain carries the turn's tokens, decoded as the adapter
// decodes them), so the default table leaves it out.
func OptInPolicies() []Policy {
	return []Policy{
		{Name: RetainOnWorkerRow, Affinity: true, Decisions: engine.Decisions{RetainOnWorker: true}},
	}
}

// RetainOnWorkerRow is the name of the opt-in row of `run
// --retain-on-worker`.
const RetainOnWorkerRow = "today's + affinity + retain on worker"

// The endpoints of the in-process cluster: the engine addresses hints by
// endpoint, and these name the sockets nothing binds.
const enginePinEndpoint = "inproc://sim-pin"

func engineWorkerEndpoint(i int) string { return "inproc://sim-worker-" + strconv.Itoa(i+1) }

// engineRun is hintstream's decision engine (engine.NewEngine, as run and
// replay build it) in process, on the simulated clock: the cluster's KV
// events and loads are applied to it directly, its hints are applied to
// the cluster as soon as the decision that made them returns. Nothing
// sleeps and nothing waits on a socket, so a run takes the time of its
// decisions.
type engineRun struct {
	p        *player
	pol      Policy
	eng      *engine.Engine
	kv       *index.Applier // the cluster's KV events, as run and replay apply them
	counters *metrics.Families
	epoch    time.Time
	seq      uint64
	pending  []sentHint
	chosen   map[int]int
	aff      map[string]schemas.AffinityRecord
	reqs     *memRequests
	slots    *hpins.MemSlots
	worker   map[string]int // hint endpoint → worker index
	forgets  int            // requests forgotten, to prune now and then
	ttl      time.Duration  // the engine's prefetch TTL
	// answered is the worker of each session's latest response, as the
	// tracker keeps it (program.workerID).
	answered map[string]int
	// responding is the request whose response the engine is deciding
	// on (-1: none): the request a retain it sends names.
	responding int
}

func startEngine(p *player, pol Policy) (*engineRun, error) {
	h := &engineRun{p: p, pol: pol, counters: metrics.New(), chosen: map[int]int{}, aff: map[string]schemas.AffinityRecord{},
		reqs: newMemRequests(), worker: map[string]int{}, ttl: pol.Decisions.WithDefaults().PrefetchTTL,
		answered: map[string]int{}, responding: -1,
		// Any fixed epoch: every time the engine sees is simulated.
		epoch: time.UnixMilli(1 << 40)}
	cc := clusterConfig(p.cfg)
	cc.L3Eviction = pol.L3Eviction
	cc.Endpoints = make([]string, p.cfg.Workers)
	for i := range cc.Endpoints {
		cc.Endpoints[i] = engineWorkerEndpoint(i)
		h.worker[cc.Endpoints[i]] = i
	}
	cc.Sink = engineSink{h}
	var err error
	if p.cl, err = cluster.NewCluster(cc); err != nil {
		return nil, err
	}
	ix := pol.Decisions.NewIndex(p.cfg.Logger)
	deps := engine.EngineDeps{Index: ix, Workers: p.cl.Router, Sender: h, Counters: h.counters, Log: p.cfg.Logger,
		Clock: h.now}
	if !pol.NoPins {
		h.slots = hpins.NewMemSlots()
		deps.Pins = &hpins.Deps{Endpoint: enginePinEndpoint, Index: h.reqs, Slots: h.slots, Workers: recordLookup(p.cl.Records()),
			Keys: p.pr.pins.keys}
	}
	if pol.Affinity {
		deps.Affinity = h
	}
	d := pol.Decisions
	if d.PinBudgetTokens == 0 && pol.PinBudget {
		d.PinBudgetTokens = int64(p.cfg.L3Blocks) * int64(p.w.BlockSize)
	}
	if h.eng, err = engine.NewEngine(d, deps); err != nil {
		return nil, err
	}
	h.kv = index.NewApplier(ix, index.ApplierConfig{Counters: h.counters})
	return h, nil
}

func (h *engineRun) now() time.Time { return h.epoch.Add(h.p.cl.Now()) }

// Send is the engine's sender: it keeps the hint for drain, which applies
// it once the decision returns (the engine sends while it decides). The
// simulated peer is always connected, so the hint counts as taken at
// once, as the pool's Sent hook says of a connected peer (the affinity
// record is written then).
func (h *engineRun) Send(endpoint string, hint actions.Hint) error {
	h.pending = append(h.pending, sentHint{endpoint, hint})
	if hint.Sent != nil {
		hint.Sent()
	}
	return nil
}

type sentHint struct {
	endpoint string
	hint     actions.Hint
}

// RecordAffinity keeps each session's latest wake-up choice, as the
// affinity bucket does.
func (h *engineRun) RecordAffinity(session string, rec schemas.AffinityRecord) { h.aff[session] = rec }

// forget drops the session's affinity record after its last turn: no
// later turn can read it. Now and then it also drops what outlived its
// use: pin slot records past their pin plus the linger, as the
// hintstream_pins bucket's TTL does (pins.DefaultSlotLinger), and
// affinity records expired for cluster.DefaultForgetLapsed; so a long
// play holds the recent sessions, not every one.
func (h *engineRun) forget(i int) {
	if h.p.forgetSessions && h.p.w.SessionLast(i) {
		delete(h.aff, h.p.w.Req(i).Session)
		delete(h.answered, h.p.w.Req(i).Session)
	}
	if h.forgets++; h.forgets%forgetPruneEvery != 0 {
		return
	}
	now := h.now()
	if h.slots != nil {
		h.slots.Prune(now.Add(-hpins.DefaultSlotLinger).UnixMilli())
	}
	for s, rec := range h.aff {
		if rec.ExpiresAtMs < now.Add(-cluster.DefaultForgetLapsed).UnixMilli() {
			delete(h.aff, s)
		}
	}
}

// forgetPruneEvery is how many forgotten requests apart forget prunes:
// the prune walks every record, so this keeps it O(1) a request.
const forgetPruneEvery = 1024

func (h *engineRun) delivery() engine.Delivery {
	h.seq++
	return engine.Delivery{Seq: h.seq, Time: h.now(), Delivered: 1}
}

// tick runs the pins' renewals due by the simulated time.
func (h *engineRun) tick(ctx context.Context) {
	if pp := h.eng.Pins(); pp != nil {
		pp.Tick(ctx, h.now())
		h.drain()
	}
}

func (h *engineRun) wakeup(ctx context.Context, i int) error {
	// With affinity the tracker's tool_end prefetch with no prediction
	// before it names the worker that answered the call, which holds the
	// context (agents.Config.Affinity): a prefetch elsewhere cannot load
	// it before the turn.
	if r := h.p.w.Req(i); h.pol.Affinity && r.WakeupAtToolEnd() && r.Prev >= 0 {
		if o, ok := h.answered[r.Session]; ok {
			return h.wakeupOn(ctx, i, false, o)
		}
	}
	return h.wakeupOn(ctx, i, false, -1)
}

// wakeupOn tells the engine of request i's wake-up at its time or, resent,
// now, naming worker wk (its index; -1: none, the engine picks) as the
// agent tracker names the worker its predicted prefetch went to.
func (h *engineRun) wakeupOn(ctx context.Context, i int, resent bool, wk int) error {
	h.tick(ctx)
	// As live: the loads of this moment, and every KV event so far (the
	// sink applied them as they happened).
	if err := h.p.cl.PublishLoads(); err != nil {
		return err
	}
	pr, err := h.p.get(i)
	if err != nil {
		return err
	}
	if h.chosen[i], _, err = h.p.cl.Route(pr); err != nil {
		return err
	}
	ev := h.p.w.WakeupEventTokens(i, h.epoch, pr.Tokens)
	if resent {
		ev.ReceivedAtMs = h.now().UnixMilli()
	}
	if wk >= 0 {
		ev.WorkerID = h.p.cl.Workers[wk].Record.WorkerID
	}
	out := h.eng.OnRequest(ctx, h.delivery(), ev, false)
	if out.Verdict == engine.Reject || out.Verdict == engine.Retry {
		return fmt.Errorf("engine: wake-up %s: %v", out.Verdict, out.Err)
	}
	h.drain()
	return nil
}

// preferred honours a session's affinity record only when this turn's
// own wake-up wrote it, as the real-service run does, and only until it
// expires, as client.Affinity.PreferredWorker does.
func (h *engineRun) preferred(_ context.Context, i int) (int, bool, error) {
	if !h.pol.Affinity {
		return 0, false, nil
	}
	r := h.p.w.Req(i)
	rec, ok := h.aff[r.Session]
	if !ok || !r.HasWakeup || rec.RequestID != h.p.w.WakeupID(i) || rec.ExpiresAtMs <= h.now().UnixMilli() {
		return 0, false, nil
	}
	for k, wk := range h.p.cl.Workers {
		if wk.Record.WorkerID == rec.WorkerID {
			return k, true, nil
		}
	}
	return 0, false, nil
}

func (h *engineRun) request(ctx context.Context, i int) error {
	h.tick(ctx)
	// The agent tracker's tool_end prefetch (decide/agents
	// Tracker.toolEnd): a predicted prefetch that expired before the tool
	// ended is sent again at its end, to the worker it went to, and writes
	// the affinity record the turn is routed by.
	if r := h.p.w.Req(i); r.WakeupPredicted() && r.At-r.WakeupAt > h.ttl {
		wk, ok := h.p.prefetchedTo[i]
		if !ok {
			wk = -1
		}
		if err := h.wakeupOn(ctx, i, true, wk); err != nil {
			return err
		}
	}
	pr, err := h.p.prompt(i)
	if err != nil {
		return err
	}
	ev := h.p.w.RequestEventTokens(i, h.epoch, h.p.cfg.AnnounceToolTime, pr.Tokens)
	out := h.eng.OnRequest(ctx, h.delivery(), ev, false)
	if out.Verdict == engine.Reject || out.Verdict == engine.Retry {
		return fmt.Errorf("engine: request %s: %v", out.Verdict, out.Err)
	}
	h.drain()
	return nil
}

func (h *engineRun) response(ctx context.Context, i, worker int) error {
	h.tick(ctx)
	r := h.p.w.Req(i)
	ev := h.p.w.ResponseEvent(i, h.p.cl.Workers[worker].Record.WorkerID, h.epoch)
	out := h.eng.OnResponse(ctx, h.delivery(), ev)
	if out.Verdict == engine.Reject || out.Verdict == engine.Retry {
		return fmt.Errorf("engine: response %s: %v", out.Verdict, out.Err)
	}
	h.responding = i
	h.drain()
	h.responding = -1
	h.answered[r.Session] = worker
	// Pinned or not, the request is not looked up again: memory stays
	// with the requests in flight.
	h.reqs.forget(r.ID)
	delete(h.chosen, i)
	return nil
}

// drain applies the hints the engine sent, as a worker scheduler
// (prefetch) or the Mooncake master (pin) does, at the simulated time.
func (h *engineRun) drain() {
	for len(h.pending) > 0 {
		sent := h.pending[0]
		h.pending = h.pending[1:]
		hint := sent.hint
		h.apply(sent.endpoint, hint)
		if hint.Done != nil {
			hint.Done(true)
		}
		if hint.Release != nil {
			hint.Release(hint.Body)
		}
	}
	h.pending = h.pending[:0]
}

func (h *engineRun) apply(endpoint string, raw actions.Hint) {
	res := &h.p.res
	hint := cluster.DecodeNoTokens(raw.Body)
	if hint.Err != nil && h.retain(endpoint, raw.Body) {
		return
	}
	if hint.Err != nil {
		res.BadHints++
		h.p.cfg.Logger.Warn("simulate: undecodable hint", "err", hint.Err)
		return
	}
	now := h.p.cl.Now()
	for _, pf := range hint.Prefetches {
		if h.pol.NoPrefetch {
			continue
		}
		if pf.ExpiresAtMs <= h.now().UnixMilli() {
			res.ExpiredPrefetches++
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(pf.RequestID, "wake-"))
		if err != nil || i < 0 || i >= h.p.w.Len() {
			res.BadHints++
			continue
		}
		wk, ok := h.worker[endpoint]
		if !ok {
			res.BadHints++
			continue
		}
		pr, err := h.p.get(i)
		if err == nil {
			err = h.p.prefetch(i, wk, pr)
		}
		if err != nil {
			res.BadHints++
			h.p.cfg.Logger.Warn("simulate: prefetch not applied", "request_id", pf.RequestID, "err", err)
			continue
		}
		if c, ok := h.chosen[i]; ok && c == wk {
			res.SelectionAgreement++
		}
	}
	for _, pin := range hint.Pins {
		if endpoint != enginePinEndpoint {
			res.BadHints++
			continue
		}
		h.p.cl.L3.Pin(pin.Slot, pin.Keys, time.Duration(pin.TTLMs)*time.Millisecond, now)
		if pin.TTLMs > 0 {
			res.Pins++
		} else {
			res.Releases++
		}
	}
}

// retain applies a hintstream.retain (run --retain-on-worker) as the
// adapter has vLLM keep the claim's blocks: the worker it went to keeps
// what it holds of the turn's prompt for the retain's TTL
// (cluster.Retain). It reports whether body was a retain of a request in
// its response, decoded as the adapter decodes it.
func (h *engineRun) retain(endpoint string, body []byte) bool {
	env, err := receiver.Decode(body)
	if err != nil || len(env.Actions) != 1 || env.Actions[0].Retain == nil {
		return false
	}
	rt := env.Actions[0].Retain
	wk, ok := h.worker[endpoint]
	i := h.responding
	if !ok || i < 0 || rt.RequestID != h.p.w.Req(i).ID {
		return false
	}
	pr, err := h.p.get(i)
	if err != nil {
		return false
	}
	h.p.cl.Retain(wk, pr, time.Duration(rt.TTLMs)*time.Millisecond)
	h.p.res.Retains++
	return true
}

func (h *engineRun) finish(res *ModeResult) {
	c := h.counters
	res.Counters = c.Summary()
	res.Renewals = int(c.HintsRenewQueued.Value())
	res.Pins -= res.Renewals
}

func (h *engineRun) close() {}

// engineSink applies the cluster's KV events (to the index, through the
// applier) and loads (to the engine), as the state consumers would.
type engineSink struct{ h *engineRun }

func (s engineSink) KVEvent(ev *schemas.RouterEvent) error {
	if s.h.kv == nil {
		return nil
	}
	return s.h.kv.Apply(kvevents.Batch{Events: []kvevents.Event{kvevents.FromRouterEvent(ev)}})
}

func (s engineSink) Load(l *schemas.ActiveLoad) error {
	if s.h.eng == nil {
		return nil
	}
	return s.h.eng.ApplyLoad(l)
}

// recordLookup is the registry for the pins: the cluster's records.
type recordLookup []schemas.WorkerRecord

func (r recordLookup) Get(id uint64) (schemas.WorkerRecord, bool) {
	for _, w := range r {
		if w.WorkerID == id {
			return w, true
		}
	}
	return schemas.WorkerRecord{}, false
}
