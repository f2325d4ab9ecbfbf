package whatif

import (
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/nats-io/nats.go/jetstream"
)

// DefaultKVLookback is how long before --since the KV events are read to
// rebuild the workers' device caches as they stood when the window
// began: long enough for a cache of a few thousand blocks to have turned
// over at any useful load.
const DefaultKVLookback = 10 * time.Minute

// Observed is the real cluster's device hits on the window's requests,
// as its own KV events tell them: a calibration check for the simulated
// "off" run (and for the policy the cluster actually ran). The workers'
// device caches are rebuilt in hintstream's KV index (index.Memory,
// the one the engine routes prefetches with) from every KV event between
// Since − lookback and Until, in stream order; each request finds, on the
// worker its response names, the leading full blocks the index held just
// before it arrived (events stored at its millisecond or later are not
// seen: they are its own, or after it).
type Observed struct {
	// Requests counts the window's requests with a response naming its
	// worker; Unserved those without one (not counted below).
	Requests        int   `json:"requests"`
	Unserved        int   `json:"unserved"`
	PromptTokens    int64 `json:"prompt_tokens"`
	DeviceHitTokens int64 `json:"device_hit_tokens"`
	// Share is DeviceHitTokens over PromptTokens (NaN: no request).
	Share Num `json:"device_hit_share"`
	// KVEvents is the KV events applied (the lookback's included); Frames
	// counts Dynamo event-plane frames, which are not applied.
	KVEvents int `json:"kv_events_applied"`
	Frames   int `json:"kv_frames_not_applied"`
	// KVRejected counts events the index refused (through
	// index.Applier, as run applies them).
	KVRejected int     `json:"kv_events_rejected"`
	LookbackS  float64 `json:"kv_lookback_s"`
}

// observer replays KV events into an index and scores the requests
// between them.
type observer struct {
	ix        *index.Memory
	dec       kvevents.Decoder
	kv        *index.Applier      // to ix, as run applies KV events
	applied   *metrics.CounterVec // kv's, by kind
	blockSize int
	out       Observed
	// pending are the records not yet scored, in time order, with the
	// worker their response named (0: none).
	recs   []obsRec
	next   int
	counts map[kvevents.WorkerKey]int
}

type obsRec struct {
	at     int64
	full   []uint64 // the full blocks' sequence hashes
	prompt int
	worker uint64
}

func newObserver(blockSize int, lookback time.Duration) *observer {
	c := metrics.New()
	o := &observer{ix: index.New(), applied: c.KVEventsApplied, blockSize: blockSize,
		counts: map[kvevents.WorkerKey]int{}, out: Observed{LookbackS: lookback.Seconds()}}
	o.kv = index.NewApplier(o.ix, index.ApplierConfig{Counters: c})
	return o
}

// until scores every record that arrived before atMs.
func (o *observer) until(atMs int64) {
	for o.next < len(o.recs) && o.recs[o.next].at < atMs {
		o.score(&o.recs[o.next])
		o.next++
	}
}

func (o *observer) score(r *obsRec) {
	if r.worker == 0 {
		o.out.Unserved++
		return
	}
	o.ix.OverlapInto(r.full, o.counts)
	hit := 0
	for k, n := range o.counts {
		if k.WorkerID == r.worker {
			hit = max(hit, n)
		}
	}
	o.out.Requests++
	o.out.PromptTokens += int64(r.prompt)
	o.out.DeviceHitTokens += int64(min(hit*o.blockSize, r.prompt))
}

// apply decodes one KV-event message and applies it to the index.
func (o *observer) apply(m jetstream.Msg, md *jetstream.MsgMetadata, w Window) error {
	o.until(md.Timestamp.UnixMilli())
	o.dec.Limits = w.Limits
	b, err := o.dec.Decode(kvevents.Message{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
	if err != nil {
		return err
	}
	if b.Envelope != nil {
		o.out.Frames++
		return nil
	}
	// An event the index cannot place (a stored block whose parent was
	// stored before the lookback, an unknown tier) is counted, not fatal:
	// the index goes on as run's would.
	before := o.applied.Total()
	_ = o.kv.Apply(b)
	n := int(o.applied.Total() - before)
	o.out.KVEvents += n
	o.out.KVRejected += len(b.Events) - n
	return nil
}

// finish scores the records after the last KV event.
func (o *observer) finish() Observed {
	o.until(1<<63 - 1)
	o.out.Share = Num(ratio(float64(o.out.DeviceHitTokens), float64(o.out.PromptTokens)))
	return o.out
}

// text writes the observed share and, beside it, each run's simulated
// device hit share at the first point.
func (o *Observed) text(w io.Writer, r *Report) {
	fmt.Fprintf(w, "observed on the cluster (its KV events, %.0f s lookback): device hits %s of prompt tokens on %d served requests (%d KV events applied, %d rejected, %d unserved requests)\n",
		o.LookbackS, pct(o.Share), o.Requests, o.KVEvents, o.KVRejected, o.Unserved)
	if len(r.Points) == 0 {
		return
	}
	fmt.Fprint(w, "simulated device hits:")
	for k, run := range r.Points[0].Runs {
		if run.Kind == "bound" {
			continue
		}
		sep := ","
		if k == 0 {
			sep = ""
		}
		fmt.Fprintf(w, "%s %s %s", sep, run.Name, pct(Num(ratio(float64(run.DeviceHitTokens), float64(r.PromptTokens)))))
	}
	fmt.Fprintln(w)
}
