package whatif

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif/workload"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrEmptyWindow: the stream window holds no request to play.
var ErrEmptyWindow = errors.New("whatif: no requests in the stream window")

// Window is a stretch of a cluster's recorded history.
type Window struct {
	Streams        streams.Set // names and subjects (streams.DefaultSet())
	RegistryBucket string      // default registry.DefaultBucket
	Since, Until   time.Time   // Until zero: up to what the streams hold now
	SkipBad        bool        // count undecodable events and go on
	Limits         schemas.Limits
	// KVLookback is how long before Since KV events are read to rebuild
	// the workers' device caches for Observed; 0: DefaultKVLookback,
	// negative: none.
	KVLookback time.Duration
	// RequestTrace is the stream of Dynamo's request-trace records, read
	// beside the requests (requesttrace_streams.go); no Name: none.
	RequestTrace streams.Config
}

// StreamSource is what FromStreams read.
type StreamSource struct {
	Source
	// Workers and BlockSize come from the registry's records.
	Workers, BlockSize int
	// Events counts the messages read in the window, by stream kind
	// ("kv_events_lookback": the KV events read before Since).
	Events map[string]int
	// Observed is the cluster's own device hits on the window's
	// requests, from its KV events (observed.go).
	Observed Observed
}

// FromStreams reads a cluster's own requests and responses between Since
// and Until, and its registry, read-only: ordered (ephemeral) consumers
// and KV reads; nothing is published, no stream or bucket is created or
// changed. Each request (wake-ups aside: the simulation announces every
// next turn itself) becomes a record: its time (received_at_ms, else the
// stream's), session, prompt length and block ids — the Dynamo sequence
// hashes of its full blocks, so equal prefixes have equal ids as in a
// Mooncake trace — and its response's output length. The simulated
// caches start empty and fill from the requests, as the clairvoyant
// bound assumes; the KV events, from KVLookback before Since on, give
// Observed: the device hits the real cluster had on the same requests,
// beside which the report puts the simulated runs' (a calibration check).
func FromStreams(ctx context.Context, js jetstream.JetStream, w Window) (StreamSource, error) {
	if w.RegistryBucket == "" {
		w.RegistryBucket = registry.DefaultBucket
	}
	if w.Limits == (schemas.Limits{}) {
		w.Limits = schemas.DefaultLimits()
	}
	out := StreamSource{Events: map[string]int{}}
	out.Name = fmt.Sprintf("streams %s..%s", w.Since.UTC().Format(time.RFC3339), untilName(w.Until))
	var err error
	out.Workers, out.BlockSize, err = readRegistry(ctx, js, w.RegistryBucket)
	// A Dynamo deployment may register no worker with hintstream: its
	// request trace names the workers and its block size (readRequestTrace).
	regErr := err
	if err != nil && w.RequestTrace.Name == "" {
		return out, err
	}
	type pending struct {
		rec    int
		prompt int
	}
	byID := map[string]pending{}
	outputs := map[string]int{}
	servedBy := map[string]uint64{}
	// How each response ended (finish_reason, the first tool called):
	// the facts the signal model reads instead of the assumed rule.
	type finish struct{ reason, tool string }
	finishes := map[string]finish{}
	var synthetic uint64 = 1 << 63 // ids of partial trailing blocks: never shared
	var last int64
	bad := func(kind string, seq uint64, err error) error {
		le := &workload.LineError{Line: int(seq), Reason: kind + " stream sequence " + fmt.Sprint(seq) + ": " + err.Error(), Source: "whatif"}
		if !w.SkipBad {
			return le
		}
		out.Skipped++
		if out.FirstSkipped == nil {
			out.FirstSkipped = le
		}
		return nil
	}
	err = readWindow(ctx, js, w.Streams.Requests, w, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		out.Events["requests"]++
		if regErr != nil {
			return fmt.Errorf("requests stream: %w (request events are hashed at the workers' block size)", regErr)
		}
		req, _, err := engine.DecodeRequest(w.Limits, engine.Message{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if err != nil {
			return bad("requests", md.Sequence.Stream, err)
		}
		if v, ok := schemas.LookupHeader(req.Headers, schemas.HeaderWakeup); ok && v != "" && v != "0" {
			return nil
		}
		at := md.Timestamp.UnixMilli()
		if req.ReceivedAtMs > 0 {
			at = req.ReceivedAtMs
		}
		// Frontends publish in arrival order give or take a little: a
		// request stamped before the last one played is played at that
		// time, so the simulated clock never goes back.
		at = max(at, last)
		last = at
		ids := kvevents.PromptHashes(req.TokenIDs, out.BlockSize)
		if len(req.TokenIDs)%out.BlockSize != 0 || len(ids) == 0 {
			synthetic++
			ids = append(ids, synthetic)
		}
		rec := workload.Record{Timestamp: at, InputLength: len(req.TokenIDs), HashIDs: ids}
		if req.SessionID != "" {
			rec.Session = "s:" + req.SessionID
		}
		byID[req.RequestID] = pending{rec: len(out.Records), prompt: len(req.TokenIDs)}
		out.Records = append(out.Records, rec)
		return nil
	})
	if err != nil {
		return out, err
	}
	err = readWindow(ctx, js, w.Streams.Responses, w, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		out.Events["responses"]++
		resp, err := engine.DecodeResponse(w.Limits, engine.Message{Subject: m.Subject(), Header: m.Headers(), Data: m.Data()})
		if err != nil {
			return bad("responses", md.Sequence.Stream, err)
		}
		outputs[resp.RequestID] = len(resp.OutputTokenIDs)
		servedBy[resp.RequestID] = resp.WorkerID
		if f := (finish{reason: resp.FinishReason}); f.reason != "" || len(resp.ToolCalls) > 0 {
			if len(resp.ToolCalls) > 0 {
				f.tool = resp.ToolCalls[0].Name
			}
			finishes[resp.RequestID] = f
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	for id, p := range byID {
		if n, ok := outputs[id]; ok {
			out.Records[p.rec].OutputLength = n
		}
		if f, ok := finishes[id]; ok {
			out.Records[p.rec].FinishReason, out.Records[p.rec].Tool = f.reason, f.tool
		}
	}
	traced, err := readRequestTrace(ctx, js, w, &out, bad)
	if err != nil {
		return out, err
	}
	if regErr != nil {
		if traced.n == 0 {
			return out, regErr
		}
		out.Workers = traced.workers
	}
	// The KV events, from the lookback on, rebuild the workers' device
	// caches in a KV index; each request is scored against it as it
	// stood when the request came (Observed).
	lookback := w.KVLookback
	if lookback == 0 {
		lookback = DefaultKVLookback
	}
	lookback = max(lookback, 0)
	obs := newObserver(out.BlockSize, lookback)
	obs.recs = make([]obsRec, len(out.Records))
	for id, p := range byID {
		r := out.Records[p.rec]
		obs.recs[p.rec] = obsRec{at: r.Timestamp, full: r.HashIDs[:p.prompt/out.BlockSize], prompt: p.prompt, worker: servedBy[id]}
	}
	traced.observe(out.Records, obs.recs)
	kw := w
	if !w.Since.IsZero() {
		kw.Since = w.Since.Add(-lookback)
	}
	if err := readWindow(ctx, js, w.Streams.KVEvents, kw, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		if md.Timestamp.Before(w.Since) {
			out.Events["kv_events_lookback"]++
		} else {
			out.Events["kv_events"]++
		}
		if err := obs.apply(m, md, w); err != nil {
			return bad("kv_events", md.Sequence.Stream, err)
		}
		return nil
	}); err != nil {
		return out, err
	}
	out.Observed = obs.finish()
	out.Source.Observed = &out.Observed
	if traced.mismatch {
		out.Source.Observed = nil // KV events at another block size than the records'
	}
	if len(out.Records) == 0 {
		return out, fmt.Errorf("%w %s: %d request events (wake-ups and bad ones aside), %d responses, %d request-trace records, %d KV events",
			ErrEmptyWindow, out.Name, out.Events["requests"], out.Events["responses"], out.Events["request_trace"], out.Events["kv_events"])
	}
	return out, nil
}

func untilName(t time.Time) string {
	if t.IsZero() {
		return "now"
	}
	return t.UTC().Format(time.RFC3339)
}

// readRegistry reads the worker records: their count and block size.
func readRegistry(ctx context.Context, js jetstream.JetStream, bucket string) (workers, blockSize int, err error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return 0, 0, fmt.Errorf("whatif: registry bucket %s: %w", bucket, err)
	}
	keys, err := kv.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return 0, 0, fmt.Errorf("whatif: registry bucket %s holds no worker", bucket)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("whatif: registry bucket %s: %w", bucket, err)
	}
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if err != nil {
			continue // deleted meanwhile
		}
		var rec schemas.WorkerRecord
		if err := json.Unmarshal(e.Value(), &rec); err != nil || rec.KvBlockSize == 0 {
			continue
		}
		workers++
		if blockSize == 0 {
			blockSize = int(rec.KvBlockSize)
		}
	}
	if workers == 0 {
		return 0, 0, fmt.Errorf("whatif: registry bucket %s holds no usable worker record", bucket)
	}
	return workers, blockSize, nil
}

// readWindow hands each message of the stream stored between w.Since
// and w.Until (or the stream's end when the read began) to f, through an
// ordered consumer: ephemeral, server-side state only, no message
// written. A stream that does not exist has nothing in the window.
func readWindow(ctx context.Context, js jetstream.JetStream, cfg streams.Config, w Window,
	f func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	s, err := js.Stream(ctx, cfg.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	end := info.State.LastSeq
	if info.State.Msgs == 0 || end == 0 {
		return nil
	}
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: cfg.Subjects, DeliverPolicy: jetstream.DeliverAllPolicy}
	if !w.Since.IsZero() {
		t := w.Since
		occ.DeliverPolicy, occ.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := js.OrderedConsumer(ctx, cfg.Name, occ)
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(512, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			if md.Sequence.Stream > end || (!w.Until.IsZero() && md.Timestamp.After(w.Until)) {
				return nil
			}
			if err := f(m, md); err != nil {
				return err
			}
			if md.Sequence.Stream == end {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, jetstream.ErrNoMessages) {
			return err
		}
		if n == 0 {
			return nil // nothing after Since
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
