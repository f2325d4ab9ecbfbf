package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/workload"
)

// Defaults of Config.
const (
	DefaultWorkers      = 4
	DefaultDeviceBlocks = 1024
	DefaultL3Blocks     = 6144
)

// ErrPrompt marks a prompt the cluster cannot map to pages.
var ErrPrompt = errors.New("cluster: prompt")

// EventSink receives what a real worker would publish: KV events and load
// reports. A nil sink in Config publishes nothing.
type EventSink interface {
	KVEvent(ev *schemas.RouterEvent) error
	Load(l *schemas.ActiveLoad) error
}

// Config sizes a Cluster. Zero fields take the defaults above.
type Config struct {
	Workers      int
	DeviceBlocks int // device cache per worker, in blocks
	L3Blocks     int // shared L3 store, in pages
	BlockSize    int // kv_block_size and L3 page size, in tokens
	Model        string
	// Layout names the L3 objects; default DefaultLayout(BlockSize). It
	// must give one object per page.
	Layout *schemas.ObjectLayout
	// Routing of the router model; nil: routing.DefaultConfig().
	Routing *routing.Config
	// Endpoints are the workers' hint endpoints (index = worker); default
	// inproc placeholders, for runs without hints.
	Endpoints []string
	Sink      EventSink
	// KVBytesPerToken and L3Bandwidth (bytes/s), both set, give an L3 →
	// device load of t tokens t × KVBytesPerToken ÷ L3Bandwidth: a
	// prefetch's pages become usable one by one as they land, each
	// worker's link loading one prefetch after another. Zero: loads are
	// instant.
	KVBytesPerToken int
	L3Bandwidth     float64
	// L3Eviction is the L3 store's eviction order: "" or EvictLRU
	// (Mooncake's), EvictARC (l3_arc.go).
	L3Eviction string
}

// DefaultLayout is one pool with one object per page under key prefix
// "sim": the same key for a page whichever worker wrote it, so the store
// is shared.
func DefaultLayout(pageSize int) *schemas.ObjectLayout {
	return &schemas.ObjectLayout{Backend: "mooncake", PageSize: uint32(pageSize),
		HicacheObjectLayout: schemas.HicacheObjectLayout{KeyPrefix: "sim", PpSize: 1,
			Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{""}, HitPolicy: actions.HitAllPages}}}}
}

func (c Config) withDefaults() Config {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Workers, DefaultWorkers)
	def(&c.DeviceBlocks, DefaultDeviceBlocks)
	def(&c.L3Blocks, DefaultL3Blocks)
	def(&c.BlockSize, workload.DefaultBlockSize)
	if c.Model == "" {
		c.Model = workload.DefaultModel
	}
	if c.Layout == nil {
		c.Layout = DefaultLayout(c.BlockSize)
	}
	if c.Routing == nil {
		d := routing.DefaultConfig()
		c.Routing = &d
	}
	return c
}

// Worker is one simulated worker (dp rank 0 only).
type Worker struct {
	Record    schemas.WorkerRecord
	Cache     *DeviceCache
	eventID   uint64
	active    []active
	published *schemas.ActiveLoad
	// readyAt holds the blocks a prefetch is still loading: usable from
	// that time. linkFree is when the worker's L3 link is next idle.
	readyAt  map[uint64]time.Duration
	linkFree time.Duration
}

type active struct {
	prefillEnd, end time.Duration
	prefillTokens   uint64
	blocks          uint64
	// held are the device blocks the request holds until end.
	held []uint64
}

// release ends the device holds of w's requests whose response has
// ended by now, and drops them.
func (wk *Worker) release(now time.Duration) {
	keep := wk.active[:0]
	for _, a := range wk.active {
		if a.end <= now {
			wk.Cache.Unhold(a.held)
			continue
		}
		keep = append(keep, a)
	}
	clear(wk.active[len(keep):])
	wk.active = keep
}

// Cluster is N workers, the shared L3 store and the router model, on a
// simulated clock. Not safe for concurrent use.
type Cluster struct {
	cfg     Config
	Workers []*Worker
	L3      *L3Store
	Router  *Router
	now     time.Duration
}

// NewCluster builds the cluster described by cfg.
func NewCluster(cfg Config) (*Cluster, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Endpoints) != 0 && len(cfg.Endpoints) != cfg.Workers {
		return nil, fmt.Errorf("cluster: %d endpoints for %d workers", len(cfg.Endpoints), cfg.Workers)
	}
	c := &Cluster{cfg: cfg, L3: NewL3Store(cfg.L3Blocks)}
	switch cfg.L3Eviction {
	case "", EvictLRU:
	case EvictARC:
		c.L3 = NewL3StoreARC(cfg.L3Blocks)
	default:
		return nil, fmt.Errorf("cluster: L3 eviction %q (want %q or %q)", cfg.L3Eviction, EvictLRU, EvictARC)
	}
	records := make([]schemas.WorkerRecord, cfg.Workers)
	caches := make([]*DeviceCache, cfg.Workers)
	for i := range cfg.Workers {
		ep := fmt.Sprintf("inproc://sim-worker-%d", i+1)
		if len(cfg.Endpoints) > 0 {
			ep = cfg.Endpoints[i]
		}
		records[i] = schemas.WorkerRecord{WorkerID: uint64(i + 1), Model: cfg.Model,
			KvBlockSize: uint32(cfg.BlockSize), HintEndpoints: []string{ep}, ObjectLayout: cfg.Layout}
		caches[i] = NewDeviceCache(cfg.DeviceBlocks)
		c.Workers = append(c.Workers, &Worker{Record: records[i], Cache: caches[i], readyAt: map[uint64]time.Duration{}})
	}
	var err error
	if c.Router, err = NewRouter(records, caches, *cfg.Routing); err != nil {
		return nil, err
	}
	return c, nil
}

// Config returns the configuration in effect.
func (c *Cluster) Config() Config { return c.cfg }

// Records are the workers' registry records.
func (c *Cluster) Records() []schemas.WorkerRecord { return c.Router.records }

// Now is the simulated time.
func (c *Cluster) Now() time.Duration { return c.now }

// Advance moves the simulated time to t; it never goes back.
func (c *Cluster) Advance(t time.Duration) { c.now = max(c.now, t) }

// Prompt is a prompt's tokens with its blocks' Dynamo sequence hashes and
// its pages' Mooncake keys (Seq[i] and Keys[i] name the same block).
// Local, when set, is its blocks' local hashes
// (kvevents.LocalBlockHashes of Tokens); else the cluster makes them
// when it first publishes a stored event of the prompt.
type Prompt struct {
	Tokens []uint32
	Seq    []uint64
	Keys   []string
	Local  []uint64
}

// Prompt hashes tokens as a worker of this cluster does.
func (c *Cluster) Prompt(tokens []uint32) (*Prompt, error) {
	p := &Prompt{Tokens: tokens, Seq: kvevents.PromptHashes(tokens, c.cfg.BlockSize)}
	keys, err := actions.ObjectKeys(c.cfg.Layout, tokens)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrompt, err)
	}
	if len(keys) != len(p.Seq) {
		return nil, fmt.Errorf("%w: %d L3 keys for %d blocks: the layout must give one object per block", ErrPrompt, len(keys), len(p.Seq))
	}
	p.Keys = keys
	return p, nil
}

// Route picks the worker for p with the router model at the current time.
func (c *Cluster) Route(p *Prompt) (int, routing.Candidate, error) {
	for i := range c.Workers {
		c.Router.SetLoad(c.Load(i))
	}
	if len(p.Seq) > 0 && len(p.Seq) == len(p.Tokens)/c.cfg.BlockSize {
		// The prompt's hashes, made once for every run, are what the
		// selector would make of its tokens (every worker's blocks are
		// BlockSize, the seed the unsalted one): not hashed again.
		return c.Router.RouteHashes(c.cfg.Model, p.Seq, c.cfg.BlockSize, len(p.Tokens))
	}
	return c.Router.Route(c.cfg.Model, p.Tokens)
}

// Outcome is where a request's prompt tokens came from.
type Outcome struct {
	DeviceTokens, L3Tokens, RecomputedTokens int
	// UnreadyTokens are tokens held on the device that a prefetch had not
	// finished loading when the request came (counted in L3Tokens or
	// RecomputedTokens instead).
	UnreadyTokens int
}

// readyPrefix is how many leading blocks of seq w holds and can use now,
// and how many it holds (ready or still loading).
func (c *Cluster) readyPrefix(wk *Worker, seq []uint64) (ready, held int) {
	held = wk.Cache.Prefix(seq)
	ready = held
	for i, h := range seq[:held] {
		if at, ok := wk.readyAt[h]; ok && at > c.now {
			ready = i
			break
		}
	}
	return ready, held
}

// transfer is the time to load n blocks from L3 (0 without transfer time).
func (c *Cluster) transfer(n int) time.Duration {
	if c.cfg.KVBytesPerToken <= 0 || c.cfg.L3Bandwidth <= 0 {
		return 0
	}
	return time.Duration(float64(n*c.cfg.BlockSize*c.cfg.KVBytesPerToken) / c.cfg.L3Bandwidth * float64(time.Second))
}

func (wk *Worker) forget(evicted []uint64) {
	for _, h := range evicted {
		delete(wk.readyAt, h)
	}
}

// Serve runs p (inputLength tokens) on worker w now: its leading blocks
// held on device are hits, the L3-resident pages that follow are loaded,
// the rest is recomputed; then every full block is stored on device and
// written through to L3. The request keeps the worker busy prefilling for
// prefill and active until end, and its blocks on the device until then
// (DeviceCache.Hold): no later request or prefetch evicts them.
func (c *Cluster) Serve(w int, p *Prompt, inputLength int, prefill, end time.Duration) (Outcome, error) {
	wk := c.Workers[w]
	wk.release(c.now)
	bs := c.cfg.BlockSize
	d, held := c.readyPrefix(wk, p.Seq)
	l := c.L3.Run(p.Keys, d)
	c.L3.TouchAt(p.Keys[d:d+l], c.now)
	out := Outcome{DeviceTokens: d * bs, L3Tokens: l * bs, UnreadyTokens: (held - d) * bs}
	out.RecomputedTokens = max(inputLength-out.DeviceTokens-out.L3Tokens, 0)
	wk.Cache.Expire(c.now)
	a := wk.Cache.Admit(p.Seq)
	wk.forget(a.Evicted)
	// What the request did not find ready it computed or loaded itself.
	wk.forget(p.Seq)
	if err := c.emit(wk, p, a); err != nil {
		return out, err
	}
	c.L3.Put(p.Keys, c.now)
	ac := active{prefillEnd: c.now + prefill, end: max(end, c.now),
		prefillTokens: uint64(max(inputLength-d*bs, 0)), blocks: uint64((inputLength + bs - 1) / bs)}
	if ac.end > c.now {
		ac.held = p.Seq[:wk.Cache.Hold(p.Seq)]
	}
	wk.active = append(wk.active, ac)
	return out, nil
}

// Prefetch loads into worker w's device the pages of p that L3 holds
// right after what w already holds, and returns how many blocks it
// loaded.
func (c *Cluster) Prefetch(w int, p *Prompt) (int, error) {
	wk := c.Workers[w]
	wk.release(c.now)
	d := wk.Cache.Prefix(p.Seq)
	l := c.L3.Run(p.Keys, d)
	if l == 0 {
		return 0, nil
	}
	c.L3.TouchAt(p.Keys[d:d+l], c.now)
	wk.Cache.Expire(c.now)
	a := wk.Cache.Admit(p.Seq[:d+l])
	wk.forget(a.Evicted)
	if per := c.transfer(1); per > 0 {
		// The pages land in prompt order, after the link's earlier loads.
		at := max(c.now, wk.linkFree)
		for _, r := range a.Stored {
			for j := r.Start; j < r.End; j++ {
				at += per
				wk.readyAt[p.Seq[j]] = at
			}
		}
		wk.linkFree = at
	}
	return l, c.emit(wk, p, a)
}

// Retain keeps the blocks of p that worker w holds on its device for
// ttl from now (DeviceCache.Protect), as an engine keeps a retained
// claim's blocks, and returns how many it keeps.
func (c *Cluster) Retain(w int, p *Prompt, ttl time.Duration) int {
	return c.Workers[w].Cache.Protect(p.Seq, c.now+ttl)
}

// Load is worker w's load now: active_prefill_tokens of requests still
// prefilling, active_decode_blocks of every active request.
func (c *Cluster) Load(w int) schemas.ActiveLoad {
	wk := c.Workers[w]
	wk.release(c.now)
	var prefill, blocks uint64
	for _, a := range wk.active {
		blocks += a.blocks
		if a.prefillEnd > c.now {
			prefill += a.prefillTokens
		}
	}
	used := uint64(wk.Cache.Len())
	return schemas.ActiveLoad{WorkerID: wk.Record.WorkerID, ActiveDecodeBlocks: &blocks,
		ActivePrefillTokens: &prefill, KvUsedBlocks: &used}
}

// PublishLoads sends each worker's load to the sink when it changed since
// it was last sent.
func (c *Cluster) PublishLoads() error {
	if c.cfg.Sink == nil {
		return nil
	}
	for i, wk := range c.Workers {
		l := c.Load(i)
		if prev := wk.published; prev != nil && prev.DecodeBlocks() == l.DecodeBlocks() &&
			prev.PrefillTokens() == l.PrefillTokens() && prev.UsedBlocks() == l.UsedBlocks() {
			continue
		}
		if err := c.cfg.Sink.Load(&l); err != nil {
			return err
		}
		wk.published = &l
	}
	return nil
}

// emit publishes an admission as Dynamo RouterEvents: the evictions, then
// one stored event per run of new blocks.
func (c *Cluster) emit(wk *Worker, p *Prompt, a Admission) error {
	if c.cfg.Sink == nil {
		return nil
	}
	if len(a.Evicted) > 0 {
		hashes := make([]schemas.BlockHash, len(a.Evicted))
		for i, h := range a.Evicted {
			hashes[i] = schemas.BlockHash(h)
		}
		if err := c.send(wk, schemas.KvCacheEventData{Kind: schemas.KindRemoved,
			Removed: &schemas.KvCacheRemoveData{BlockHashes: hashes}}); err != nil {
			return err
		}
	}
	if len(a.Stored) > 0 && p.Local == nil {
		p.Local = kvevents.LocalBlockHashes(p.Tokens, c.cfg.BlockSize)
	}
	for _, r := range a.Stored {
		st := &schemas.KvCacheStoreData{Blocks: make([]schemas.StoredBlock, 0, r.End-r.Start)}
		if r.Start > 0 {
			parent := schemas.BlockHash(p.Seq[r.Start-1])
			st.ParentHash = &parent
		}
		for j := r.Start; j < r.End; j++ {
			st.Blocks = append(st.Blocks, schemas.StoredBlock{BlockHash: schemas.BlockHash(p.Seq[j]),
				TokensHash: schemas.BlockHash(p.Local[j])})
		}
		if err := c.send(wk, schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: st}); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) send(wk *Worker, data schemas.KvCacheEventData) error {
	wk.eventID++
	return c.cfg.Sink.KVEvent(&schemas.RouterEvent{WorkerID: wk.Record.WorkerID,
		Event: schemas.KvCacheEvent{EventID: wk.eventID, Data: data}})
}
