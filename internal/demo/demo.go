// Package demo simulates a small serving cluster on a JetStream bus so a
// newcomer can watch hints flow: workers that bind PULL hint sockets,
// register themselves, publish KV events and load; a frontend (a
// client.Publisher) that publishes wake-ups, and agent turns whose
// responses end in tool calls; and, given a Master, a Mooncake master at
// the pin endpoint that prints each pin, renewal and release.
package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// Model is the model every demo worker serves.
const Model = "Qwen/Qwen3-8B"

// BlockSize is the demo workers' KV block size.
const BlockSize = 16

// Options configure a Demo.
type Options struct {
	Interval time.Duration // between requests; default 1s
	Count    int           // requests to publish; 0 = until cancelled
	Out      io.Writer     // where the story is printed; default io.Discard
	Logger   *slog.Logger
	Bucket   string // registry bucket; default registry.DefaultBucket
	// BindHost is where the workers bind their hint sockets; default
	// 127.0.0.1. AdvertiseHost is the host put in their registry records,
	// for when hintstream runs elsewhere (another container); default
	// BindHost.
	BindHost, AdvertiseHost string
	// TrafficOnly publishes requests but simulates no workers (they run
	// elsewhere, in another demo): a load generator.
	TrafficOnly bool
	// Master, when set, is the simulated Mooncake master at hintstream's
	// pin endpoint; Run runs and closes it.
	Master *Master
	// Forward, when set, is given every hint message a worker received,
	// as received: `run --demo --demo-engine` passes it on to a
	// `hintstream adapter` in front of a stand-in engine.
	Forward func(workerID uint64, msg []byte)
	// Agents adds an agent whose harness publishes tool events (agent.go;
	// hintstream must run with --agents). Outcomes, when set, gives the
	// agent hints' outcomes decided since its last call, one line each.
	Agents   bool
	Outcomes func() []string
}

// Received is one hint a demo worker got.
type Received struct {
	WorkerID  uint64
	RequestID string
	SessionID string
	Tokens    int
	DpRank    uint32
	ExpiresAt time.Time
}

// Demo is a simulated cluster and frontend.
type Demo struct {
	js   jetstream.JetStream
	pub  *client.Publisher
	opts Options
	// run makes request ids unique per run: hint message ids derive from
	// them, and receivers drop repeated ids.
	run string

	mu       sync.Mutex
	received []Received
}

// New returns a demo publishing on js.
func New(js jetstream.JetStream, o Options) *Demo {
	if o.Interval <= 0 {
		o.Interval = time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Bucket == "" {
		o.Bucket = registry.DefaultBucket
	}
	if o.BindHost == "" {
		o.BindHost = "127.0.0.1"
	}
	if o.AdvertiseHost == "" {
		o.AdvertiseHost = o.BindHost
	}
	// JSON, the default options: they cannot fail.
	pub, _ := client.NewPublisher(js)
	return &Demo{js: js, pub: pub, opts: o, run: fmt.Sprintf("%04x", time.Now().UnixNano()&0xffff)}
}

// Received returns the hints the demo workers got so far.
func (d *Demo) Received() []Received {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Received(nil), d.received...)
}

// session is one conversation: its prompt, and which worker has how much
// of it cached.
type session struct {
	id       string
	prompt   []uint32
	expected uint64 // worker the wake-up should reach
	why      string
	cached   int // blocks of the prompt the expected worker caches
}

// Run sets the cluster up, then publishes requests (Count of them, or
// without end) and returns, with the workers closed, once ctx is done.
func (d *Demo) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var masterDone chan struct{}
	if m := d.opts.Master; m != nil {
		masterDone = make(chan struct{})
		go func() {
			defer close(masterDone)
			m.run(ctx, func(format string, args ...any) { fmt.Fprintf(d.opts.Out, format, args...) })
		}()
		fmt.Fprintf(d.opts.Out, "demo: Mooncake master (simulated) at %s: tool-call pins on\n", m.Endpoint())
	}
	kv, err := registry.Bucket(ctx, d.js, d.opts.Bucket)
	if err != nil {
		cancel()
		return err
	}
	var workers []*worker
	defer func() {
		cancel()
		for _, w := range workers {
			w.close()
		}
		if masterDone != nil {
			<-masterDone
		}
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer fcancel()
		_ = d.pub.Close(fctx)
	}()
	nWorkers := 3
	if d.opts.TrafficOnly {
		nWorkers = 0
	}
	for i := range nWorkers {
		w, err := newWorker(uint64(i+1), d)
		if err != nil {
			return err
		}
		workers = append(workers, w)
		go w.receive(ctx)
		rec := schemas.WorkerRecord{WorkerID: w.id, Model: Model, KvBlockSize: BlockSize,
			HintEndpoints: []string{w.endpoint}, ObjectLayout: layout(w.id)}
		if err := registry.Put(ctx, kv, rec); err != nil {
			return err
		}
		fmt.Fprintf(d.opts.Out, "demo: worker %d registered, hint socket %s\n", w.id, w.endpoint)
	}

	sessions := d.sessions()
	if !d.opts.TrafficOnly {
		d.seedCache(ctx, sessions)
		if err := d.publishLoads(ctx); err != nil {
			return err
		}
		fmt.Fprintf(d.opts.Out, "demo: KV events and load published; a wake-up every %v (Ctrl-C to stop)\n", d.opts.Interval)
	}

	if d.opts.Agents && !d.opts.TrafficOnly {
		agentDone := make(chan struct{})
		go func() {
			defer close(agentDone)
			if err := d.runAgent(ctx); err != nil && ctx.Err() == nil {
				d.opts.Logger.Warn("demo agent stopped", "err", err)
			}
		}()
		defer func() { cancel(); <-agentDone }()
	}
	tick := time.NewTicker(d.opts.Interval)
	defer tick.Stop()
	for n := 0; d.opts.Count == 0 || n < d.opts.Count; n++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := d.publishRequest(ctx, n, sessions); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	<-ctx.Done()
	return nil
}

// sessions are the demo's conversations. Their prompts are fixed, so a
// traffic-only demo sends the prompts the worker demo cached.
//
//	worker 1: session A (10 blocks) and the shared system prompt
//	worker 2: session B (14 blocks) and the shared system prompt
//	worker 3: session C (6 blocks) and the shared system prompt
//
// Session D is cached nowhere beyond the system prompt, so its wake-up is
// decided by load.
func (d *Demo) sessions() []session {
	system := tokens(1000, 2*BlockSize)
	mk := func(base uint32, blocks int) []uint32 {
		return append(append([]uint32{}, system...), tokens(base, blocks*BlockSize)...)
	}
	// Each session's next turn adds a few new tokens the cache lacks.
	turn := func(p []uint32, base uint32) []uint32 { return append(append([]uint32{}, p...), tokens(base, 40)...) }
	return []session{
		{"session-A", turn(mk(10000, 8), 50000), 1, "worker 1 caches 10 of its blocks", 10},
		{"session-B", turn(mk(20000, 12), 51000), 2, "worker 2 caches 14 of its blocks", 14},
		{"session-C", turn(mk(30000, 4), 52000), 3, "worker 3 caches 6 of its blocks", 6},
		{"session-D", turn(mk(40000, 6), 53000), 2, "all cache 2 blocks; worker 2 is the least loaded", 0},
	}
}

// seedCache publishes the KV events that give each worker its cache: the
// cached blocks of the session it is expected to win.
func (d *Demo) seedCache(ctx context.Context, sessions []session) {
	for _, s := range sessions[:3] {
		if err := d.storeAll(ctx, s.expected, s.prompt[:s.cached*BlockSize]); err != nil {
			d.opts.Logger.Warn("demo KV event", "worker_id", s.expected, "err", err)
		}
	}
}

func (d *Demo) storeAll(ctx context.Context, worker uint64, prompt []uint32) error {
	local := kvevents.LocalBlockHashes(prompt, BlockSize)
	seq := kvevents.SequenceHashes(local)
	blocks := make([]schemas.StoredBlock, len(local))
	for i := range local {
		// Engines report their own sequence hash; any stable value works.
		blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(seq[i]), TokensHash: schemas.BlockHash(local[i])}
	}
	ev := schemas.RouterEvent{WorkerID: worker, Event: schemas.KvCacheEvent{EventID: 1,
		Data: schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}}
	return d.publishJSON(ctx, streams.KVEventSubject(worker), ev)
}

func (d *Demo) publishLoads(ctx context.Context) error {
	for id, decode := range map[uint64]uint64{1: 5, 2: 1, 3: 3} {
		dec := decode
		if err := d.publishJSON(ctx, streams.LoadSubject(id), schemas.ActiveLoad{WorkerID: id, ActiveDecodeBlocks: &dec}); err != nil {
			return err
		}
	}
	return nil
}

func (d *Demo) publishRequest(ctx context.Context, n int, sessions []session) error {
	// Every fifth request is an agent's turn, alternately of sessions A
	// and C: a plain request (no prefetch) whose response ends in a tool
	// call, which hintstream pins on the Mooncake master until the
	// session's next turn, ten requests later, releases it (renewing the
	// pin if the tool outlasts half its TTL).
	if n%5 == 4 {
		s := sessions[0]
		if (n/5)%2 == 1 {
			s = sessions[2]
		}
		// The request announces a short tool call (2 s): its pin gets the
		// shortest TTL (--pin-min-ttl, 10 s by default) and is renewed at
		// half of it, before the session's next turn releases it.
		req := &schemas.RequestEvent{RequestID: fmt.Sprintf("demo-%s-turn-%d", d.run, n), SessionID: s.id,
			Model: Model, TokenIDs: s.prompt, Headers: map[string]string{schemas.HeaderSimToolCall: "2000"},
			ReceivedAtMs: time.Now().UnixMilli()}
		fmt.Fprintf(d.opts.Out, "demo: → plain request %s for %s (no prefetch expected; releases the session's pin)\n",
			req.RequestID, s.id)
		if err := d.pub.PublishRequest(ctx, req); err != nil {
			return err
		}
		// The model answers half an interval later, as a real one takes
		// its time (and a pin never overtakes the previous turn's release).
		time.AfterFunc(d.opts.Interval/2, func() {
			resp := &schemas.ResponseEvent{RequestID: req.RequestID, SessionID: s.id, Model: Model, WorkerID: s.expected,
				FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "web_search"}},
				OutputTokenIDs: tokens(60000+uint32(n), 2*BlockSize), CompletedAtMs: time.Now().UnixMilli()}
			if err := d.pub.PublishResponse(ctx, resp); err != nil {
				return // the demo is stopping
			}
			fmt.Fprintf(d.opts.Out, "demo: → response %s from worker %d ends in a tool call (web_search): expect a pin\n",
				resp.RequestID, resp.WorkerID)
		})
		return nil
	}
	s := sessions[(n-n/5)%len(sessions)]
	req := &schemas.RequestEvent{RequestID: fmt.Sprintf("demo-%s-wake-%d", d.run, n), SessionID: s.id, Model: Model,
		TokenIDs: s.prompt, Headers: map[string]string{schemas.HeaderWakeup: "1"},
		ReceivedAtMs: time.Now().UnixMilli()}
	fmt.Fprintf(d.opts.Out, "demo: → wake-up %s for %s, %d tokens (expect worker %d: %s)\n",
		req.RequestID, s.id, len(s.prompt), s.expected, s.why)
	return d.pub.PublishRequest(ctx, req)
}

// layout is worker id's L3 object layout, in the shape SGLang reports it
// (GET /get_hicache_l3_cache_layout): pins name its Mooncake objects.
func layout(id uint64) *schemas.ObjectLayout {
	return &schemas.ObjectLayout{Backend: "mooncake", PageSize: BlockSize,
		HicacheObjectLayout: schemas.HicacheObjectLayout{KeyPrefix: fmt.Sprintf("demo-w%d_Qwen-Qwen3-8B", id), PpSize: 1,
			Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_0_k", "_0_v"}, HitPolicy: "all_pages"}}}}
}

func (d *Demo) publishJSON(ctx context.Context, subject string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = d.js.Publish(ctx, subject, b)
	return err
}

func (d *Demo) record(r Received) {
	d.mu.Lock()
	d.received = append(d.received, r)
	d.mu.Unlock()
	fmt.Fprintf(d.opts.Out, "demo: ← worker %d got kv.prefetch for %s (%s, %d tokens, dp rank %d, expires in %v)\n",
		r.WorkerID, r.RequestID, r.SessionID, r.Tokens, r.DpRank, time.Until(r.ExpiresAt).Round(time.Millisecond))
}

func tokens(base uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = base + uint32(i)
	}
	return out
}
