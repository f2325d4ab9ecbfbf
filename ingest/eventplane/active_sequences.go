package eventplane

import (
	"errors"
	"math"
	"time"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// TopicActiveSequences is ACTIVE_SEQUENCES_SUBJECT (lib/llm/src/kv_router.rs):
// the topic on which a KV router with replica sync on publishes its
// ActiveSequenceEvents.
const TopicActiveSequences = "active_sequences_events"

// kindSequences is the DecodeError kind of a bad active_sequences_events
// payload.
const kindSequences = "event_plane_active_sequence"

// SequenceKind is an ActiveSequenceEventData variant.
type SequenceKind uint8

// The variants, named as serde writes them (externally tagged, no
// rename): "AddRequest" (a struct variant), "Free", "MarkPrefillCompleted".
const (
	// SequenceAdd: the router booked a request on a worker (routing
	// time, before the worker has seen it).
	SequenceAdd SequenceKind = iota + 1
	// SequencePrefillCompleted: the request's prefill is done.
	SequencePrefillCompleted
	// SequenceFree: the request ended (finished, cancelled or expired).
	SequenceFree
)

// String is the variant's serde name.
func (k SequenceKind) String() string {
	switch k {
	case SequenceAdd:
		return "AddRequest"
	case SequencePrefillCompleted:
		return "MarkPrefillCompleted"
	case SequenceFree:
		return "Free"
	}
	return "unknown"
}

// ActiveSequenceEvent is Dynamo's ActiveSequenceEvent
// (lib/kv-router/src/protocols.rs):
//
//	{request_id, worker: {worker_id, dp_rank}, data, router_id, lora_name?}
//
// published by a KV router when DYN_ROUTER_REPLICA_SYNC is on, so that
// its peers book the same load. An AddRequest is the earliest record of a
// request Dynamo publishes: the worker the router chose, at routing time,
// with the prompt's sequence hashes.
type ActiveSequenceEvent struct {
	// RequestID is the router's request id (the frontend's request id,
	// the one the request trace names as request_id).
	RequestID string
	// WorkerID and DpRank are the worker (and data-parallel rank) the
	// router chose.
	WorkerID uint64
	DpRank   uint32
	Kind     SequenceKind
	// RouterID is the publishing router's discovery instance id (its
	// peers drop their own echo by it); 0 when the publisher wrote none
	// or, as revisions before it became a u64, a UUID.
	RouterID uint64
	// LoraName is the request's LoRA adapter, "" for none.
	LoraName string
	// Add is set for SequenceAdd.
	Add *AddRequest
}

// AddRequest is the AddRequest variant's fields. Revisions differ: today's
// carries track_prefill_tokens and prefill_load_hint; earlier ones isl
// and overlap. Whichever are present are set.
type AddRequest struct {
	// SequenceHashes are the prompt's rolling sequence hashes, one per
	// full block at the router's block size (token_sequence, from
	// KvRouterConfig::compute_seq_hashes_for_tracking): the values the
	// index holds for those blocks when the router hashes as the workers'
	// KV events do (the request's LoRA name and cache namespace in
	// current sources; unsalted in older ones; keyed tracking matches
	// nothing). HasSequence is false when the router sent None
	// (router_track_active_blocks off); with router_assume_kv_reuse off
	// the router sends random hashes, which match nothing.
	SequenceHashes []uint64
	HasSequence    bool
	// ExpectedOutputTokens is the request's expected output length, nil
	// when unknown.
	ExpectedOutputTokens *uint32
	// TrackPrefillTokens is true unless the router said otherwise
	// (#[serde(default = "default_track_prefill_tokens")]).
	TrackPrefillTokens bool
	// PrefillLoadHint is the router's estimate of the prefill, nil when
	// absent.
	PrefillLoadHint *PrefillLoadHint
	// ISL (input tokens) and Overlap (blocks the chosen worker already
	// held) are set by revisions that send them.
	ISL     *uint64
	Overlap *uint32
}

// PrefillLoadHint is Dynamo's PrefillLoadHint.
type PrefillLoadHint struct {
	InitialEffectivePrefillTokens uint64
	// ExpectedPrefillDuration is nil when the router had no estimate.
	ExpectedPrefillDuration *time.Duration
}

// ActiveSequences is one decoded active_sequences_events frame: its
// envelope and its events, in the publisher's order. On the NATS
// transport a frame holds one event; on ZMQ (and in some revisions on
// both) an ActiveSequenceEventBatch {events: [...]}, up to 256.
type ActiveSequences struct {
	Envelope Envelope
	Events   []ActiveSequenceEvent
	// Batch is true when the payload was an ActiveSequenceEventBatch.
	Batch bool
}

// DecodeActiveSequences decodes an active_sequences_events frame: the
// envelope, whose topic must be TopicActiveSequences, and its payload
// (DecodeActiveSequencePayload).
func DecodeActiveSequences(data []byte, lim schemas.Limits) (ActiveSequences, error) {
	lim = fill(lim)
	env, err := DecodeEnvelope(data, lim)
	if err != nil {
		return ActiveSequences{}, err
	}
	if env.Topic != TopicActiveSequences {
		return ActiveSequences{}, malformed(kindEnvelope, "envelope topic is not active_sequences_events", nil)
	}
	evs, batch, err := DecodeActiveSequencePayload(env.Payload, lim)
	if err != nil {
		return ActiveSequences{}, err
	}
	return ActiveSequences{Envelope: env, Events: evs, Batch: batch}, nil
}

// DecodeActiveSequencePayload decodes the payload of an
// active_sequences_events frame as rmp_serde::to_vec_named writes it
// (lib/kv-router/src/protocols.rs ActiveSequenceEvent and
// ActiveSequenceEventBatch; lib/llm/src/kv_router/sequence.rs chooses
// one event a frame on NATS and a batch on ZMQ): either one event map or
// {events: [event, ...]} (batch reports which). data is the externally
// tagged ActiveSequenceEventData: the bare string "Free" or
// "MarkPrefillCompleted" (a map {"Free": nil} is taken too), or
// {"AddRequest": {token_sequence, track_prefill_tokens?,
// expected_output_tokens, prefill_load_hint?, isl?, overlap?}}.
//
// As serde does, keys come in any order and unknown ones are skipped;
// any other variant is an error (reason "unknown active sequence
// variant"), as it is for Dynamo's own subscriber, which drops the whole
// frame. Hashes are msgpack integers (negative ones taken as two's
// complement); a frame holds at most lim.MaxTokens events and an event at
// most lim.MaxTokens hashes.
func DecodeActiveSequencePayload(payload []byte, lim schemas.Limits) ([]ActiveSequenceEvent, bool, error) {
	d := seqDecoder{lim: fill(lim)}
	n, b, err := msgp.ReadMapHeaderBytes(payload)
	if err != nil {
		return nil, false, d.bad("payload not a msgpack map", err)
	}
	var one ActiveSequenceEvent
	var have seqFields
	var events []ActiveSequenceEvent
	batch := false
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return nil, false, d.bad("key not a string", err)
		}
		if string(key) == "events" {
			if batch {
				return nil, false, d.bad("events repeated", nil)
			}
			batch = true
			if events, b, err = d.events(b); err != nil {
				return nil, false, err
			}
			continue
		}
		if b, err = d.field(key, b, &one, &have); err != nil {
			return nil, false, err
		}
	}
	if len(b) != 0 {
		return nil, false, d.bad("trailing bytes after payload", nil)
	}
	switch {
	case batch && have.any():
		return nil, false, d.bad("payload is both an event and a batch", nil)
	case batch:
		return events, true, nil
	}
	if err := have.check(d); err != nil {
		return nil, false, err
	}
	return []ActiveSequenceEvent{one}, false, nil
}

type seqDecoder struct{ lim schemas.Limits }

// bad names a truncated frame as such, whatever was being read.
func (d *seqDecoder) bad(reason string, err error) error {
	if errors.Is(err, msgp.ErrShortBytes) {
		reason = "truncated msgpack"
	}
	return malformed(kindSequences, reason, err)
}

// seqFields records which of an event's fields were read.
type seqFields struct{ requestID, worker, data, other bool }

func (h seqFields) any() bool { return h.requestID || h.worker || h.data || h.other }

func (h seqFields) check(d seqDecoder) error {
	switch {
	case !h.requestID:
		return d.bad("missing request_id", nil)
	case !h.worker:
		return d.bad("missing worker", nil)
	case !h.data:
		return d.bad("missing data", nil)
	}
	return nil
}

// events reads an ActiveSequenceEventBatch's events.
func (d *seqDecoder) events(b []byte) ([]ActiveSequenceEvent, []byte, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return nil, b, d.bad("events not an array", err)
	}
	// The smallest event: a fixmap of request_id, worker and data, each
	// key a fixstr, each value at least one byte: 1+3*2 bytes and more.
	if int64(n) > int64(d.lim.MaxTokens) || int64(n)*7 > int64(len(b)) {
		return nil, b, d.bad("too many events", nil)
	}
	out := make([]ActiveSequenceEvent, n)
	for i := range out {
		if b, err = d.event(b, &out[i]); err != nil {
			return nil, b, err
		}
	}
	return out, b, nil
}

// event reads one ActiveSequenceEvent map.
func (d *seqDecoder) event(b []byte, ev *ActiveSequenceEvent) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("event not a msgpack map", err)
	}
	var have seqFields
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		if b, err = d.field(key, b, ev, &have); err != nil {
			return b, err
		}
	}
	return b, have.check(*d)
}

// field reads one key of an ActiveSequenceEvent.
func (d *seqDecoder) field(key, b []byte, ev *ActiveSequenceEvent, have *seqFields) ([]byte, error) {
	var err error
	switch string(key) {
	case "request_id":
		var s []byte
		if s, b, err = d.str(b); err != nil {
			return b, d.bad("request_id not a string", err)
		}
		if len(s) == 0 {
			return b, d.bad("empty request_id", nil)
		}
		ev.RequestID = string(s)
		have.requestID = true
	case "worker":
		if b, err = d.worker(b, ev); err != nil {
			return b, err
		}
		have.worker = true
	case "worker_id":
		// Revisions before WorkerWithDpRank: a bare i64 worker id.
		var v int64
		if msgp.NextType(b) == msgp.UintType {
			var u uint64
			u, b, err = msgp.ReadUint64Bytes(b)
			v = int64(u)
			if u > math.MaxInt64 {
				v = -1
			}
		} else {
			v, b, err = msgp.ReadInt64Bytes(b)
		}
		if err != nil || v < 0 {
			return b, d.bad("worker_id not an unsigned integer", err)
		}
		ev.WorkerID, ev.DpRank = uint64(v), 0
		have.worker = true
	case "router_id":
		if msgp.NextType(b) == msgp.UintType {
			if ev.RouterID, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return b, d.bad("router_id not a u64", err)
			}
		} else if b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth); err != nil {
			return b, d.bad(skipReason(err), err)
		}
		have.other = true
	case "lora_name":
		if msgp.IsNil(b) {
			b, _ = msgp.ReadNilBytes(b)
			ev.LoraName = ""
		} else {
			var s []byte
			if s, b, err = d.str(b); err != nil {
				return b, d.bad("lora_name not a string", err)
			}
			ev.LoraName = string(s)
		}
		have.other = true
	case "data":
		if have.data {
			return b, d.bad("data repeated", nil)
		}
		if b, err = d.data(b, ev); err != nil {
			return b, err
		}
		have.data = true
	default:
		if b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth); err != nil {
			return b, d.bad(skipReason(err), err)
		}
		have.other = true
	}
	return b, nil
}

// str reads a UTF-8 str of at most MaxString bytes.
func (d *seqDecoder) str(b []byte) ([]byte, []byte, error) {
	s, rest, err := msgp.ReadStringZC(b)
	if err != nil {
		return nil, b, err
	}
	if len(s) > d.lim.MaxString || !utf8.Valid(s) {
		return nil, b, d.bad("string too long or not UTF-8", nil)
	}
	return s, rest, nil
}

// worker reads a WorkerWithDpRank {worker_id, dp_rank} (both required:
// the struct has no serde defaults).
func (d *seqDecoder) worker(b []byte, ev *ActiveSequenceEvent) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("worker not a msgpack map", err)
	}
	var haveID, haveRank bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		switch string(key) {
		case "worker_id":
			if ev.WorkerID, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return b, d.bad("worker_id not an unsigned integer", err)
			}
			haveID = true
		case "dp_rank":
			if ev.DpRank, b, err = msgp.ReadUint32Bytes(b); err != nil {
				return b, d.bad("dp_rank not a u32", err)
			}
			haveRank = true
		default:
			if b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth); err != nil {
				return b, d.bad(skipReason(err), err)
			}
		}
	}
	if !haveID || !haveRank {
		return b, d.bad("worker without worker_id or dp_rank", nil)
	}
	return b, nil
}

// ReasonUnknownSequenceVariant labels an ActiveSequenceEventData variant
// this decoder does not know (a later Dynamo's).
const ReasonUnknownSequenceVariant = "unknown active sequence variant"

// data reads the externally tagged ActiveSequenceEventData.
func (d *seqDecoder) data(b []byte, ev *ActiveSequenceEvent) ([]byte, error) {
	if msgp.NextType(b) == msgp.StrType {
		s, rest, err := msgp.ReadStringZC(b)
		if err != nil {
			return rest, d.bad("truncated msgpack", err)
		}
		switch string(s) {
		case "Free":
			ev.Kind = SequenceFree
		case "MarkPrefillCompleted":
			ev.Kind = SequencePrefillCompleted
		case "AddRequest":
			return rest, d.bad("AddRequest without its fields", nil)
		default:
			return rest, d.bad(ReasonUnknownSequenceVariant, nil)
		}
		return rest, nil
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("data neither a string nor a map", err)
	}
	if n != 1 {
		return b, d.bad("data must have exactly one variant key", nil)
	}
	tag, b, err := msgp.ReadStringZC(b)
	if err != nil {
		return b, d.bad("key not a string", err)
	}
	switch string(tag) {
	case "AddRequest":
		ev.Kind = SequenceAdd
		ev.Add = &AddRequest{TrackPrefillTokens: true}
		return d.add(b, ev.Add)
	case "Free", "MarkPrefillCompleted":
		ev.Kind = SequenceFree
		if string(tag) == "MarkPrefillCompleted" {
			ev.Kind = SequencePrefillCompleted
		}
		if b, err = msgp.ReadNilBytes(b); err != nil {
			return b, d.bad("unit variant carries a value", err)
		}
		return b, nil
	}
	return b, d.bad(ReasonUnknownSequenceVariant, nil)
}

// add reads AddRequest's fields.
func (d *seqDecoder) add(b []byte, a *AddRequest) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("AddRequest not a msgpack map", err)
	}
	var haveSeq bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		switch string(key) {
		case "token_sequence":
			haveSeq = true
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				a.SequenceHashes, a.HasSequence = nil, false
				continue
			}
			if b, err = d.hashes(b, a); err != nil {
				return b, err
			}
		case "track_prefill_tokens":
			if a.TrackPrefillTokens, b, err = msgp.ReadBoolBytes(b); err != nil {
				return b, d.bad("track_prefill_tokens not a bool", err)
			}
		case "expected_output_tokens":
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				a.ExpectedOutputTokens = nil
				continue
			}
			var v uint32
			if v, b, err = msgp.ReadUint32Bytes(b); err != nil {
				return b, d.bad("expected_output_tokens not a u32", err)
			}
			a.ExpectedOutputTokens = &v
		case "prefill_load_hint":
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				a.PrefillLoadHint = nil
				continue
			}
			a.PrefillLoadHint = new(PrefillLoadHint)
			if b, err = d.hint(b, a.PrefillLoadHint); err != nil {
				return b, err
			}
		case "isl":
			var v uint64
			if v, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return b, d.bad("isl not an unsigned integer", err)
			}
			a.ISL = &v
		case "overlap":
			var v uint32
			if v, b, err = msgp.ReadUint32Bytes(b); err != nil {
				return b, d.bad("overlap not a u32", err)
			}
			a.Overlap = &v
		default:
			if b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth); err != nil {
				return b, d.bad(skipReason(err), err)
			}
		}
	}
	// token_sequence is an Option without #[serde(default)]: serde takes
	// an absent Option as None, so nothing here is required.
	_ = haveSeq
	return b, nil
}

// hashes reads token_sequence: an array of u64 (a revision with bare
// Vec<SequenceHash> writes the same).
func (d *seqDecoder) hashes(b []byte, a *AddRequest) ([]byte, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return b, d.bad("token_sequence not an array", err)
	}
	if int64(n) > int64(d.lim.MaxTokens) {
		return b, d.bad("too many sequence hashes", nil)
	}
	if int64(n) > int64(len(b)) {
		return b, d.bad("truncated msgpack", nil)
	}
	hs := make([]uint64, n)
	for i := range hs {
		if hs[i], b, err = readHash(b); err != nil {
			return b, d.bad("sequence hash not a 64-bit integer", err)
		}
	}
	a.SequenceHashes, a.HasSequence = hs, true
	return b, nil
}

// hint reads a PrefillLoadHint {initial_effective_prefill_tokens,
// expected_prefill_duration: Option<Duration>}; serde writes a Duration
// as a struct {secs: u64, nanos: u32} (a map here, an array from a
// positional encoder: both are read).
func (d *seqDecoder) hint(b []byte, h *PrefillLoadHint) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("prefill_load_hint not a msgpack map", err)
	}
	var haveTokens bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		switch string(key) {
		case "initial_effective_prefill_tokens":
			if h.InitialEffectivePrefillTokens, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return b, d.bad("initial_effective_prefill_tokens not an unsigned integer", err)
			}
			haveTokens = true
		case "expected_prefill_duration":
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				h.ExpectedPrefillDuration = nil
				continue
			}
			var dur time.Duration
			if dur, b, err = d.duration(b); err != nil {
				return b, err
			}
			h.ExpectedPrefillDuration = &dur
		default:
			if b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth); err != nil {
				return b, d.bad(skipReason(err), err)
			}
		}
	}
	if !haveTokens {
		return b, d.bad("prefill_load_hint without initial_effective_prefill_tokens", nil)
	}
	return b, nil
}

// duration reads serde's std::time::Duration.
func (d *seqDecoder) duration(b []byte) (time.Duration, []byte, error) {
	var secs uint64
	var nanos uint32
	var err error
	if msgp.NextType(b) == msgp.ArrayType {
		var n uint32
		if n, b, err = msgp.ReadArrayHeaderBytes(b); err != nil || n != 2 {
			return 0, b, d.bad("duration not [secs, nanos]", err)
		}
		if secs, b, err = msgp.ReadUint64Bytes(b); err == nil {
			nanos, b, err = msgp.ReadUint32Bytes(b)
		}
		if err != nil {
			return 0, b, d.bad("duration not [secs, nanos]", err)
		}
	} else {
		n, rest, err := msgp.ReadMapHeaderBytes(b)
		if err != nil {
			return 0, b, d.bad("duration neither a map nor an array", err)
		}
		b = rest
		var haveSecs, haveNanos bool
		for ; n > 0; n-- {
			var key []byte
			if key, b, err = msgp.ReadStringZC(b); err != nil {
				return 0, b, d.bad("key not a string", err)
			}
			switch string(key) {
			case "secs":
				secs, b, err = msgp.ReadUint64Bytes(b)
				haveSecs = true
			case "nanos":
				nanos, b, err = msgp.ReadUint32Bytes(b)
				haveNanos = true
			default:
				b, err = schemas.SkipMsgpack(b, d.lim.MaxDepth)
			}
			if err != nil {
				return 0, b, d.bad("duration field of the wrong type", err)
			}
		}
		if !haveSecs || !haveNanos {
			return 0, b, d.bad("duration without secs or nanos", nil)
		}
	}
	// serde refuses nanos of a second or more; a span past time.Duration's
	// range (292 years) is no estimate of a prefill.
	if nanos >= 1e9 || secs > uint64(math.MaxInt64/int64(time.Second))-1 {
		return 0, b, d.bad("duration out of range", nil)
	}
	return time.Duration(secs)*time.Second + time.Duration(nanos), b, nil
}
