package speed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tinylib/msgp/msgp"
)

// The stream Ingest fills. Its own, not KV_EVENTS, so a shared bus's
// other runs neither add to the count nor lose their events: it is
// emptied at the start of every run.
const (
	IngestStream  = "LOADTEST_KV_EVENTS"
	IngestSubject = "loadtest.kv.events"
)

// IngestConfig configures Ingest. Binary is required.
type IngestConfig struct {
	Binary  string // the hintstream program
	NATSURL string // "" starts an embedded server for this run only
	// Events to pre-fill and apply; default 500,000.
	Events int
	// BlocksPerEvent stored in each Dynamo RouterEvent; default 4 (about
	// 370 bytes of JSON).
	BlocksPerEvent int
	// Workers publishing, round robin; default 64. Each worker's events
	// chain (parent = its previous event's last block) in runs of 16,
	// so every parent resolves as in a real cache.
	Workers int
	// EngineBatches publishes vLLM msgpack EventBatches (array form, one
	// BlockStored of BlocksPerEvent blocks of 16 tokens each) instead of
	// Dynamo RouterEvent JSON: the same events through hintstream's
	// hand-written msgpack reader instead of encoding/json.
	EngineBatches bool
	// NatsCLI, when set, is the `nats` program (natscli NatsCLIVersion):
	// `nats bench js ordered` then reads the same stream just before and
	// just after hintstream, for the comparison.
	NatsCLI string
	// Timeout bounds hintstream's apply; default 5 min.
	Timeout    time.Duration
	CPUProfile string // when set, a CPU profile of the apply is saved here
	// ProfileSeconds is the profile's length; default 5 s (make Events
	// large enough that the apply outlasts it).
	ProfileSeconds int
	// Rounds of `nats bench js ordered` then hintstream over the one
	// filled stream, each kept in IngestResult.Rounds; default 1, which
	// is bench, hintstream, bench. More rounds let a caller judge the
	// median of per-round ratios, so one stalled round cannot decide it.
	Rounds int
	// Also, when set with Rounds > 1, is a second program (e.g. hintstream
	// built before a change) applied in every round right after Binary,
	// into IngestRound.Also: a before/after in the same run.
	Also string
	// IndexCapacity is passed to hintstream (and Also) as
	// --index-capacity: the (block, worker) device entries the stream
	// holds, as an operator sizes the index for the cluster, so the apply
	// does no table growth. Default Events × BlocksPerEvent (every block
	// is unique); negative: not passed, the index grows from empty.
	IndexCapacity int64
	ExtraArgs     []string  // appended to hintstream's command line
	ChildLog      io.Writer // hintstream's output; default: kept for errors
	Progress      io.Writer // one line every ProgressEvery (2 s); nil: none
	ProgressEvery time.Duration
}

// IngestResult is one ingestion run.
type IngestResult struct {
	Events int // pre-filled, and applied
	// IndexCapacity is the --index-capacity hintstream ran with (0: none).
	IndexCapacity int64
	Bytes         int64         // their total payload size
	MeanSize      int           // bytes per event, rounded
	Applied       int64         // hintstream's kv_events.applied at the end
	Duration      time.Duration // first to last applied event
	// EventsPerSec is 0 when the apply took less than the scrape interval
	// (25 ms): too few Events to time.
	EventsPerSec float64
	MBPerSec     float64 // 10⁶ bytes per second
	// CPUPerEvent is hintstream's CPU time (user+system) over the same
	// window, per event: unlike the rate, not inflated by other programs
	// on the machine. Compare BenchResult.CPUPerMsg.
	CPUPerEvent time.Duration
	// Bench holds `nats bench js ordered` over the same stream, before
	// and after hintstream (when NatsCLI was set).
	Bench      []BenchResult
	CPUProfile string
	// Rounds holds each round's hintstream apply and the bench run just
	// before it (with IngestConfig.Rounds > 1; the top-level figures are
	// then the first round's).
	Rounds []IngestRound
}

// IngestRound is one round: bench, then hintstream, on the same stream.
type IngestRound struct {
	EventsPerSec float64
	CPUPerEvent  time.Duration
	Duration     time.Duration
	Bench        BenchResult
	// Also is IngestConfig.Also's apply in this round (zero without).
	Also struct {
		EventsPerSec float64
		CPUPerEvent  time.Duration
	}
}

// Share is hintstream's rate over the bench's in this round (0 without
// a bench).
func (r IngestRound) Share() float64 {
	if r.Bench.MsgsPerSec <= 0 {
		return 0
	}
	return r.EventsPerSec / r.Bench.MsgsPerSec
}

// BenchMsgsPerSec is the mean of the bench runs (0 without any).
func (r IngestResult) BenchMsgsPerSec() float64 {
	var s float64
	for _, b := range r.Bench {
		s += b.MsgsPerSec
	}
	if len(r.Bench) == 0 {
		return 0
	}
	return s / float64(len(r.Bench))
}

// scrapeEvery is how often Ingest reads /metrics: the resolution of its
// timing, and a small cost to the measured process.
const scrapeEvery = 25 * time.Millisecond

// Ingest pre-fills IngestStream with Events Dynamo RouterEvent JSON
// stored events (or vLLM EventBatches), starts hintstream on it and times
// how fast it applies them: from the first /metrics scrape that sees one
// applied to hintstream's "running" line (printed once the stream is
// applied to its end), so process start-up is not counted, as `nats
// bench` does not count it either. It fails unless exactly Events were
// applied.
func Ingest(ctx context.Context, cfg IngestConfig) (IngestResult, error) {
	if cfg.Binary == "" {
		return IngestResult{}, fmt.Errorf("%w: Binary is required", ErrConfig)
	}
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&cfg.Events, 500_000)
	set(&cfg.BlocksPerEvent, 4)
	set(&cfg.Workers, 64)
	set(&cfg.ProfileSeconds, 5)
	set(&cfg.Rounds, 1)
	if cfg.IndexCapacity == 0 {
		cfg.IndexCapacity = int64(cfg.Events) * int64(cfg.BlocksPerEvent)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 2 * time.Second
	}
	var res IngestResult
	err := withServer(cfg.NATSURL, func(url string) error {
		var err error
		res, err = ingest(ctx, cfg, url)
		return err
	})
	return res, err
}

func ingest(ctx context.Context, cfg IngestConfig, url string) (IngestResult, error) {
	nc, err := nats.Connect(url, nats.Name("hintstream-speed-ingest"))
	if err != nil {
		return IngestResult{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return IngestResult{}, err
	}
	sc := streams.DefaultSet().KVEvents
	sc.Name, sc.Subjects = IngestStream, []string{IngestSubject + ".>"}
	st, _, err := streams.Ensure(ctx, js, sc, streams.WithLogger(quiet))
	if err != nil {
		return IngestResult{}, err
	}
	if err := st.Purge(ctx); err != nil {
		return IngestResult{}, err
	}
	res := IngestResult{Events: cfg.Events, IndexCapacity: max(cfg.IndexCapacity, 0)}
	if res.Bytes, err = fillKVEvents(ctx, js, cfg); err != nil {
		return res, err
	}
	if err := registerIngestWorkers(ctx, js, cfg.Workers); err != nil {
		return res, err
	}
	res.MeanSize = int((res.Bytes + int64(cfg.Events)/2) / int64(cfg.Events))
	bench := func() error {
		if cfg.NatsCLI == "" {
			return nil
		}
		b, err := NatsBench(ctx, url, cfg.Events, res.MeanSize, WithStream(IngestStream), WithNatsCLI(cfg.NatsCLI))
		if err != nil {
			return err
		}
		res.Bench = append(res.Bench, b)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "ingest: nats bench js ordered: %.0f msgs/s\n", b.MsgsPerSec)
		}
		return nil
	}
	if cfg.Rounds == 1 {
		if err := bench(); err != nil {
			return res, err
		}
		if err := applyOnce(ctx, cfg, url, js, &res); err != nil {
			return res, err
		}
		return res, bench()
	}
	for i := range cfg.Rounds {
		if err := bench(); err != nil {
			return res, err
		}
		one := IngestResult{Events: res.Events, IndexCapacity: res.IndexCapacity, Bytes: res.Bytes, MeanSize: res.MeanSize}
		if i > 0 {
			one.CPUProfile, cfg.CPUProfile = "", "" // the first round's profile only
		}
		if err := applyOnce(ctx, cfg, url, js, &one); err != nil {
			return res, err
		}
		if i == 0 {
			b := res.Bench
			res = one
			res.Bench = b
		}
		round := IngestRound{EventsPerSec: one.EventsPerSec, CPUPerEvent: one.CPUPerEvent, Duration: one.Duration}
		if len(res.Bench) > i {
			round.Bench = res.Bench[i]
		}
		if cfg.Also != "" {
			also, alt := IngestResult{Events: res.Events, Bytes: res.Bytes, MeanSize: res.MeanSize}, cfg
			alt.Binary, alt.CPUProfile = cfg.Also, ""
			if err := applyOnce(ctx, alt, url, js, &also); err != nil {
				return res, err
			}
			round.Also.EventsPerSec, round.Also.CPUPerEvent = also.EventsPerSec, also.CPUPerEvent
		}
		res.Rounds = append(res.Rounds, round)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "ingest: round %d/%d: hintstream %.0f events/s, %.0f%% of the bench\n",
				i+1, cfg.Rounds, one.EventsPerSec, 100*round.Share())
		}
	}
	return res, nil
}

// applyOnce starts hintstream on the filled stream and times its apply
// into res (Applied, Duration, EventsPerSec, MBPerSec, CPUPerEvent,
// CPUProfile). It fails unless exactly cfg.Events were applied.
func applyOnce(ctx context.Context, cfg IngestConfig, url string, js jetstream.JetStream, res *IngestResult) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	group := "speed-ingest-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	args := []string{"run", "--nats-url", url, "--group", group, "--http-addr", addr, "--snapshot-interval", "0",
		"--kv-events-stream", IngestStream, "--kv-events-subjects", IngestSubject + ".>"}
	if cfg.IndexCapacity > 0 {
		args = append(args, "--index-capacity", strconv.FormatInt(cfg.IndexCapacity, 10))
	}
	if cfg.CPUProfile != "" {
		args = append(args, "--pprof")
	}
	// Ready as soon as /metrics is served, which is before the KV events
	// are read. The apply is timed from the first scrape that sees an
	// event applied (scraping stops there, so it costs the apply nothing)
	// to the "hintstream running" line, which start-up prints once the
	// KV-event stream is applied to its end.
	proc, err := startChild(cfg.Binary, append(args, cfg.ExtraArgs...), "serving /metrics", cfg.ChildLog, time.Minute,
		"hintstream running")
	if err != nil {
		return err
	}
	defer deleteConsumer(js, "LLM_REQUESTS", group+"-requests")
	stopped := false
	defer func() {
		if !stopped {
			proc.stop()
		}
	}()
	var profErr chan error
	if cfg.CPUProfile != "" {
		profErr = make(chan error, 1)
		go func() { profErr <- cpuProfile(ctx, addr, cfg.ProfileSeconds, cfg.CPUProfile) }()
	}
	client := &http.Client{Timeout: 5 * time.Second}
	var shown atomic.Int64 // applied, for the progress line
	stopProgress := progress(cfg.Progress, cfg.ProgressEvery, func(el time.Duration) string {
		if n := shown.Load(); n > 0 {
			return fmt.Sprintf("ingest: %4.1fs applying (%d applied at the start of timing)", el.Seconds(), n)
		}
		return fmt.Sprintf("ingest: %4.1fs hintstream starting", el.Seconds())
	})
	defer stopProgress()
	applied := func() (float64, map[string]float64, error) {
		m, err := scrape(ctx, client, addr, "hintstream_kv_events_")
		if err != nil {
			return 0, nil, fmt.Errorf("speed: scrape: %w\n%s", err, proc.lastLines())
		}
		return sumFamily(m, "hintstream_kv_events_applied_total"), m, nil
	}
	deadline := time.Now().Add(cfg.Timeout)
	var t1 time.Time
	var c1 float64
	var cpu1 time.Duration
	for t1.IsZero() {
		n, _, err := applied()
		now := time.Now()
		if err != nil {
			return err
		}
		if n > 0 {
			t1, c1, cpu1 = now, n, cpuTime(proc.cmd.Process.Pid)
			shown.Store(int64(n))
			break
		}
		if now.After(deadline) {
			return fmt.Errorf("speed: no KV event applied within %v:\n%s", cfg.Timeout, proc.lastLines())
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(scrapeEvery) // the scrape interval, not a synchronisation
	}
	t2, err := proc.waitLine("hintstream running", time.Until(deadline))
	if err != nil {
		return err
	}
	cpu2 := cpuTime(proc.cmd.Process.Pid)
	n, m, err := applied()
	if err != nil {
		return err
	}
	res.Applied = int64(n)
	if res.Applied != int64(cfg.Events) {
		return fmt.Errorf("speed: hintstream applied %d of %d KV events (metrics %v)", res.Applied, cfg.Events, m)
	}
	if el := t2.Sub(t1); el > 0 && n > c1 {
		res.Duration = el
		res.EventsPerSec = (n - c1) / el.Seconds()
		res.MBPerSec = res.EventsPerSec * float64(res.Bytes) / float64(cfg.Events) / 1e6
		if cpu2 > cpu1 {
			res.CPUPerEvent = time.Duration(float64(cpu2-cpu1) / (n - c1))
		}
	}
	if profErr != nil {
		if err := <-profErr; err != nil {
			return fmt.Errorf("speed: CPU profile: %w", err)
		}
		res.CPUProfile = cfg.CPUProfile
	}
	stopProgress()
	proc.stop()
	stopped = true
	return nil
}

// fillKVEvents publishes cfg.Events stored events and returns their
// total size.
func fillKVEvents(ctx context.Context, js jetstream.JetStream, cfg IngestConfig) (int64, error) {
	type chain struct {
		id   uint64 // last event id
		last uint64 // last block hash
	}
	chains := make([]chain, cfg.Workers)
	blocks := make([]schemas.StoredBlock, cfg.BlocksPerEvent)
	tokens := makePrompts(1, 16*cfg.BlocksPerEvent)[0]
	var total int64
	stop := progress(cfg.Progress, cfg.ProgressEvery, func(el time.Duration) string {
		return fmt.Sprintf("ingest: filling %s, %4.1fs", IngestStream, el.Seconds())
	})
	defer stop()
	for e := 0; e < cfg.Events; e++ {
		w := e % cfg.Workers
		c := &chains[w]
		var parent *schemas.BlockHash
		if c.id%16 != 0 {
			p := schemas.BlockHash(c.last)
			parent = &p
		}
		for i := range blocks {
			// Unique per (worker, event, block), full 64-bit range.
			h := mix(uint64(w)<<40 | uint64(e)<<4 | uint64(i))
			blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(h), TokensHash: schemas.BlockHash(mix(h))}
		}
		c.id++
		c.last = uint64(blocks[len(blocks)-1].BlockHash)
		var body []byte
		if cfg.EngineBatches {
			body = engineBatch(blocks, parent, tokens)
		} else {
			var err error
			body, err = json.Marshal(schemas.RouterEvent{WorkerID: uint64(w + 1), Event: schemas.KvCacheEvent{
				EventID: c.id, Data: schemas.KvCacheEventData{Kind: schemas.KindStored,
					Stored: &schemas.KvCacheStoreData{ParentHash: parent, Blocks: blocks}}}})
			if err != nil {
				return 0, err
			}
		}
		total += int64(len(body))
		if _, err := js.PublishAsync(IngestSubject+"."+strconv.Itoa(w+1), body); err != nil {
			return 0, err
		}
		if e%2048 == 2047 {
			if err := waitPublished(ctx, js); err != nil {
				return 0, err
			}
		}
	}
	return total, waitPublished(ctx, js)
}

func waitPublished(ctx context.Context, js jetstream.JetStream) error {
	select {
	case <-js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Minute):
		return errors.New("speed: KV event publishes not acknowledged within a minute")
	}
}

// mix is SplitMix64's finaliser: distinct inputs give distinct,
// well-spread hashes.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// engineBatch is a vLLM EventBatch in msgspec's array form, [ts, [event],
// dp_rank], holding one BlockStored [tag, block_hashes, parent_block_hash,
// token_ids, block_size, lora_id, medium].
func engineBatch(blocks []schemas.StoredBlock, parent *schemas.BlockHash, tokens []uint32) []byte {
	b := make([]byte, 0, 64+len(blocks)*9+len(tokens)*5)
	b = msgp.AppendArrayHeader(b, 3)
	b = msgp.AppendFloat64(b, float64(time.Now().UnixNano())/1e9)
	b = msgp.AppendArrayHeader(b, 1)
	b = msgp.AppendArrayHeader(b, 7)
	b = msgp.AppendString(b, "BlockStored")
	b = msgp.AppendArrayHeader(b, uint32(len(blocks)))
	for _, blk := range blocks {
		b = msgp.AppendUint64(b, uint64(blk.BlockHash))
	}
	if parent == nil {
		b = msgp.AppendNil(b)
	} else {
		b = msgp.AppendUint64(b, uint64(*parent))
	}
	b = msgp.AppendArrayHeader(b, uint32(len(tokens)))
	for _, t := range tokens {
		b = msgp.AppendUint32(b, t)
	}
	b = msgp.AppendInt(b, 16)
	b = msgp.AppendNil(b)
	b = msgp.AppendString(b, "GPU")
	return msgp.AppendInt(b, 0)
}
