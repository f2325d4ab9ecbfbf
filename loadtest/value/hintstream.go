package value

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// epochLead puts the simulated clock's epoch this far ahead of the wall
// clock. Events carry simulated times (received_at_ms, completed_at_ms),
// so hintstream learns tool times in simulated time. But it judges a
// wake-up's freshness on its own wall clock, clamping a received_at_ms
// from the future to now (decide/engine/requests.go): stamped a day ahead,
// every wake-up is fresh when it arrives however slowly the simulation
// runs, and expires_at_ms is wall time. The worker checks it against the
// wall clock when the hint arrives, which is what it bounds in a live
// system too: the hint's delivery delay. The prefetch itself happens at
// the wake-up's simulated time.
const epochLead = 24 * time.Hour

// hintstreamRun is the hintstream mode: a real instance on an embedded
// JetStream server, fed by the simulation, sending real hints over ZMQ.
type hintstreamRun struct {
	p     *simulate.Player
	cfg   simulate.Config
	srv   *server.Server
	dir   string
	nc    *nats.Conn
	js    jetstream.JetStream
	pub   *client.Publisher // the frontend's publisher, as a real cluster would use
	svc   *service.Service
	ep    *cluster.Endpoints
	epoch time.Time
	// reqPub and respPub count events published; applied envelopes taken
	// from the sockets.
	reqPub, respPub, applied int
	seen                     map[string]bool
	chosen                   map[int]int // wake-up → router model's choice at that moment
	aff                      *client.Affinity
	last                     [3]uint64 // sent, dropped, queued-or-dropped at the last check
}

func startHintstream(ctx context.Context, p *simulate.Player) (_ simulate.Hooks, err error) {
	cfg := p.Config()
	h := &hintstreamRun{p: p, cfg: cfg, epoch: time.Now().Add(epochLead).Truncate(time.Millisecond),
		seen: map[string]bool{}, chosen: map[int]int{}}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	if h.dir, err = os.MkdirTemp("", "hintstream-value-"); err != nil {
		return nil, err
	}
	// Prompts of the longest traces exceed the default 1 MiB payload.
	if h.srv, err = natsembed.Start(natsembed.Options{StoreDir: h.dir, MaxPayload: 8 << 20}); err != nil {
		return nil, err
	}
	if h.nc, err = nats.Connect(h.srv.ClientURL(), nats.Timeout(10*time.Second)); err != nil {
		return nil, err
	}
	if h.js, err = jetstream.New(h.nc); err != nil {
		return nil, err
	}
	if h.pub, err = client.NewPublisher(h.js, client.WithFormat(client.Msgpack)); err != nil {
		return nil, err
	}
	if h.ep, err = cluster.Listen(cfg.Workers); err != nil {
		return nil, err
	}
	cc := p.ClusterConfig()
	cc.Endpoints = h.ep.WorkerEndpoints()
	cc.Sink = &cluster.JetStreamSink{Ctx: ctx, JS: h.js}
	cl, err := cluster.NewCluster(cc)
	if err != nil {
		return nil, err
	}
	p.SetCluster(cl)
	// Memory streams: this bus lives for one run, and disk would only
	// slow it down.
	st := streams.DefaultSet()
	for _, c := range []*streams.Config{&st.Requests, &st.Responses, &st.KVEvents, &st.Load, &st.DeadLetter} {
		c.Storage = jetstream.MemoryStorage
	}
	scfg := service.Config{NATSURL: h.srv.ClientURL(), PinEndpoint: h.ep.PinEndpoint(), Streams: st,
		SnapshotInterval: -1, Logger: cfg.Logger, NoAffinity: !cfg.Affinity}
	h.svc = service.New(scfg)
	if err = h.svc.Start(ctx); err != nil {
		return nil, err
	}
	if err = cl.Register(ctx, h.js, scfg.RegistryBucket); err != nil {
		return nil, err
	}
	if err = h.until(ctx, func() bool { return len(h.svc.Registry().Workers()) == cfg.Workers }, "workers registered"); err != nil {
		return h, err
	}
	if cfg.Affinity {
		h.aff, err = client.OpenAffinity(ctx, h.js, scfg.AffinityBucket)
	}
	return h, err
}

// preferred is what a frontend does with affinity on: look the session
// up in hintstream's bucket and pin the turn to that worker. A record is
// honoured only if this turn's own wake-up wrote it: the record's
// expires_at_ms is on hintstream's wall clock, which in a simulation runs
// far slower than simulated time, so it cannot tell an old record from a
// fresh one (a wake-up precedes its turn by at most its lead, 1 s, well
// inside the 2 s prefetch TTL).
func (h *hintstreamRun) Preferred(ctx context.Context, i int) (int, bool, error) {
	if h.aff == nil {
		return 0, false, nil
	}
	r := h.p.Workload().Req(i)
	if !r.HasWakeup {
		return 0, false, nil
	}
	// By the turn's own wake-up: when a session's turns are closer than
	// the wake-up lead, its next wake-up has already replaced the record,
	// and the turn's is among the record's recent entries.
	pref, err := h.aff.PreferredWorkerFor(ctx, r.Session, h.p.Workload().WakeupID(i))
	if errors.Is(err, client.ErrNoPreference) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	for k, wk := range h.p.Cluster().Workers {
		if wk.Record.WorkerID == pref.WorkerID {
			return k, true, nil
		}
	}
	return 0, false, nil
}

func (h *hintstreamRun) Wakeup(ctx context.Context, i int) error {
	// hintstream decides from the bus: give it the loads of this moment
	// and let it apply every KV event so far, as a live instance would
	// have within the wake-up's lead time.
	if err := h.p.Cluster().PublishLoads(); err != nil {
		return err
	}
	if err := h.svc.WaitCaughtUp(ctx); err != nil {
		return err
	}
	pr, err := h.p.Prompt(i)
	if err != nil {
		return err
	}
	if h.chosen[i], _, err = h.p.Cluster().Route(pr); err != nil {
		return err
	}
	h.reqPub++
	return h.publish(ctx, h.pub.PublishRequest(ctx, h.p.Workload().WakeupEvent(i, h.epoch)))
}

// request publishes request i as it arrives (arrival.go), once hintstream
// has applied every KV event before it: live, those precede the turn by
// more than the bus's latency, and the turn's own come after it.
func (h *hintstreamRun) Request(ctx context.Context, i int) error {
	if err := h.svc.WaitCaughtUp(ctx); err != nil {
		return err
	}
	pr, err := h.p.Arriving(i)
	if err != nil {
		return err
	}
	h.reqPub++
	return h.publish(ctx, h.pub.PublishRequest(ctx, h.p.Workload().RequestEventTokens(i, h.epoch, h.cfg.AnnounceToolTime, pr.Tokens)))
}

func (h *hintstreamRun) Response(ctx context.Context, i, worker int) error {
	h.respPub++
	wid := h.p.Cluster().Workers[worker].Record.WorkerID
	return h.publish(ctx, h.pub.PublishResponse(ctx, h.p.Workload().ResponseEvent(i, wid, h.epoch)))
}

// publish waits for the event just handed to the publisher (err is that
// hand-off's result) to be stored, then until hintstream has finished with
// it and every hint it caused has been applied.
func (h *hintstreamRun) publish(ctx context.Context, err error) error {
	if err != nil {
		return err
	}
	if err := h.pub.Flush(ctx); err != nil {
		return err
	}
	return h.settle(ctx)
}

// settle waits, applying hints as they arrive, until hintstream has
// finished every event published and every hint it sent was applied.
func (h *hintstreamRun) settle(ctx context.Context) error {
	return h.until(ctx, func() bool {
		for {
			select {
			case hint := <-h.ep.Hints():
				h.apply(hint)
				continue
			default:
			}
			break
		}
		return h.settled()
	}, "hintstream to finish the event")
}

// settled is the condition on hintstream's own counters (see the
// package documentation, "Waiting for hintstream").
func (h *hintstreamRun) settled() bool {
	c := h.svc.Counters
	reqDone := c.RequestsPlain.Value() + c.RequestsMalformed.Total() + c.HintsPrefetchSkipped.Total() +
		c.HintsPrefetchDropped.Total() + c.HintsPrefetchQueued.Value()
	respDone := c.ResponsesNoPin.Value() + c.ResponsesMalformed.Total() + c.HintsPinSkipped.Total() +
		c.HintsPinDropped.Total() + c.HintsPinQueued.Value()
	if reqDone < uint64(h.reqPub) || respDone < uint64(h.respPub) {
		return false
	}
	// Every hint queued has been sent or dropped by its sender...
	var sent, dropped uint64
	for _, st := range h.svc.Pool().Stats() {
		sent += st.Sent
		for _, n := range st.Dropped {
			dropped += n
		}
	}
	want := c.HintsPrefetchQueued.Value() + c.HintsPrefetchDropped.Value("expired") + c.HintsPrefetchDropped.Value("queue_full")
	for _, kind := range []string{"pin", "release", "renew", "retain"} {
		queued, dropped := c.Hint(kind)
		want += queued.Value() + dropped.Value("expired") + dropped.Value("queue_full")
	}
	h.last = [3]uint64{sent, dropped, want}
	// ...and every one sent has been applied, and every queued
	// prefetch's affinity record is written (or dropped).
	if h.cfg.Affinity && c.AffinityWritten.Value()+c.AffinityDropped.Value("queue_full")+
		c.AffinityDropped.Value("error")+c.AffinitySkipped.Value("no_session") < c.HintsPrefetchQueued.Value() {
		return false
	}
	// At least as many as were sent: a socket's port may be one another
	// process's PULL socket had a moment ago, and its PUSH peers reconnect
	// and deliver their hints here too (ZMQ reconnects by itself). Such a
	// stray envelope is applied (and counted bad, or duplicate) without
	// being one of ours; waiting for equality would then never end.
	return sent+dropped == want && uint64(h.applied) >= sent
}

// until polls cond, waking early when a hint arrives, for at most the
// configured HintTimeout.
func (h *hintstreamRun) until(ctx context.Context, cond func() bool, what string) error {
	deadline := time.Now().Add(h.cfg.HintTimeout)
	wait := 20 * time.Microsecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s: not done within %v (published %d requests, %d responses; applied %d hints; senders sent %d, dropped %d of %d handed to them; counters %v)",
				what, h.cfg.HintTimeout, h.reqPub, h.respPub, h.applied, h.last[0], h.last[1], h.last[2], h.svc.Counters.Summary())
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case hint := <-h.ep.Hints():
			h.apply(hint)
		case <-t.C:
			wait = min(wait*2, 2*time.Millisecond)
		}
	}
	return nil
}

// apply does what a worker scheduler (prefetch) or the Mooncake master
// (pin) does with a hint, at the current simulated time.
func (h *hintstreamRun) apply(hint cluster.Hint) {
	h.applied++
	res := h.p.Result()
	if hint.Err != nil {
		res.BadHints++
		h.cfg.Logger.Warn("value: undecodable hint", "err", hint.Err)
		return
	}
	if h.seen[hint.MessageID] {
		res.DuplicateHints++
		return
	}
	h.seen[hint.MessageID] = true
	now := h.p.Cluster().Now()
	for _, pf := range hint.Prefetches {
		if hint.Socket == cluster.PinSocket {
			res.BadHints++
			continue
		}
		// expires_at_ms is on hintstream's (wall) clock: see epochLead.
		if pf.ExpiresAtMs <= time.Now().UnixMilli() {
			res.ExpiredPrefetches++
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(pf.RequestID, "wake-"))
		if err != nil || i < 0 || i >= h.p.Workload().Len() {
			res.BadHints++
			continue
		}
		pr, err := h.p.Cluster().Prompt(pf.TokenIDs)
		if err == nil {
			err = h.p.Prefetch(i, hint.Socket, pr)
		}
		if err != nil {
			res.BadHints++
			h.cfg.Logger.Warn("value: prefetch not applied", "request_id", pf.RequestID, "err", err)
			continue
		}
		if c, ok := h.chosen[i]; ok && c == hint.Socket {
			res.SelectionAgreement++
		}
	}
	for _, pin := range hint.Pins {
		if hint.Socket != cluster.PinSocket {
			res.BadHints++
			continue
		}
		h.p.Cluster().L3.Pin(pin.Slot, pin.Keys, time.Duration(pin.TTLMs)*time.Millisecond, now)
		if pin.TTLMs > 0 {
			res.Pins++
		} else {
			res.Releases++
		}
	}
}

func (h *hintstreamRun) Finish(res *simulate.ModeResult) {
	c := h.svc.Counters
	res.Counters = c.Summary()
	// A renewal is a pin of a slot already pinned: the L3 store cannot
	// tell it from a new one, hintstream's counters can.
	res.Renewals = int(c.HintsRenewQueued.Value() - c.HintsRenewDropped.Value("expired") -
		c.HintsRenewDropped.Value("queue_full"))
	res.Pins -= res.Renewals
}

func (h *hintstreamRun) Close() {
	if h.svc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		h.svc.Stop(ctx)
		cancel()
	}
	if h.ep != nil {
		h.ep.Close()
	}
	if h.nc != nil {
		h.nc.Close()
	}
	if h.srv != nil {
		h.srv.Shutdown()
		h.srv.WaitForShutdown()
	}
	if h.dir != "" {
		_ = os.RemoveAll(h.dir)
	}
}
