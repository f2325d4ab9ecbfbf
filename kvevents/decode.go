package kvevents

import (
	"fmt"
	"strconv"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// Message is a KV-event message as a transport hands it over: its
// subject, headers (a nats.Header is one) and bytes. What it decodes to
// depends on the subject and headers as much as on the bytes (the worker
// id of an engine batch, the bridge's epoch and sequence), so Decode takes
// all three, and a replay reads them exactly as the live consumer does.
type Message struct {
	Subject string
	Header  map[string][]string
	Data    []byte
}

// header is nats.Header.Get: the first value of the exact key.
func (m *Message) header(key string) string {
	if v := m.Header[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Batch is one KV-event message decoded: its events, in order, in the one
// shape every format is adapted to.
type Batch struct {
	Events []Event
	// Epoch is the bridge's engine incarnation (schemas.HeaderBridgeEpoch),
	// "" when the message names none: when it changes for a worker, the
	// engine restarted with an empty cache.
	Epoch string
	// Envelope is set for a frame of Dynamo's event plane (subjects
	// namespace.….kv-events): Events holds its one event, whose EventID
	// the applier takes from the envelope's sequence (Sequencer).
	Envelope *eventplane.Envelope
	// Ignored says why a well-formed event-plane frame holds nothing to
	// index (an eventplane.Ignore* constant); its sequence still counts.
	Ignored string
}

// ReasonWorkerMismatch labels KV events and load reports whose body names
// a worker other than the one in their subject (kv.events.<id>,
// kv.load.<id>). The subject is what a least-privilege server lets one
// worker's user publish on; the body is not checked by anyone. Trusting
// the body would let worker 2, on its own subject, clear worker 1's
// blocks or set its load.
const ReasonWorkerMismatch = "worker_id disagrees with subject"

// CheckSubjectWorker refuses a body worker id that differs from the one
// in subject. A subject without a worker id token (Dynamo's single
// queue subject) names no worker, so any body id passes.
func CheckSubjectWorker(kind, subject string, body uint64) error {
	id, err := streams.WorkerFromSubject(subject)
	if err != nil || id == body {
		return nil
	}
	return &schemas.DecodeError{Kind: kind, Reason: ReasonWorkerMismatch,
		Err: fmt.Errorf("body names worker %d on subject %q", body, subject)}
}

// Decode turns a KV-event message of any format into a Batch: a frame of
// Dynamo's event plane (by its subject), a Dynamo RouterEvent in JSON
// (compact or general; by its Content-Type or first byte), or a vLLM or
// SGLang EventBatch in msgpack (array or tagged-map form), whose worker is
// the subject's and whose sequence and epoch are the bridge's headers
// (schemas.HeaderBridgeSeq, schemas.HeaderBridgeEpoch). Its errors match
// schemas.ErrMalformed (a *schemas.DecodeError names the reason).
//
// The Batch's events, and the slices they hold, are in d's memory, valid
// until d's next Decode (see Decoder).
func (d *Decoder) Decode(m Message) (Batch, error) {
	lim := d.Limits
	if eventplane.IsKVEventsSubject(m.Subject) {
		if err := lim.CheckHeaders("kv_event", m.Header); err != nil {
			return Batch{}, err
		}
		fr, err := eventplane.DecodeKVEvent(m.Data, lim)
		if err != nil {
			return Batch{}, err
		}
		d.envelope = fr.Envelope
		return Batch{Events: d.RouterEvent(fr.Event), Envelope: &d.envelope, Ignored: fr.Ignored}, nil
	}
	if err := lim.CheckHeaders("kv_event", m.Header); err != nil {
		return Batch{}, err
	}
	data := m.Data
	if f, ok := schemas.DetectFormat(m.header("Content-Type"), data); ok && f == schemas.FormatJSON {
		if err := lim.DecodeRouterEventInto(data, &d.router); err != nil {
			return Batch{}, err
		}
		if err := CheckSubjectWorker("kv_event", m.Subject, d.router.WorkerID); err != nil {
			return Batch{}, err
		}
		return Batch{Events: d.RouterEvent(&d.router), Epoch: m.header(schemas.HeaderBridgeEpoch)}, nil
	}
	if !IsEngineBatch(data) {
		return Batch{}, &schemas.DecodeError{Kind: "kv_event", Reason: "neither a Dynamo RouterEvent nor an engine EventBatch"}
	}
	worker, err := streams.WorkerFromSubject(m.Subject)
	if err != nil {
		return Batch{}, &schemas.DecodeError{Kind: engineBatchKind, Reason: "subject names no worker id", Err: err}
	}
	var seq uint64
	if h := m.header(schemas.HeaderBridgeSeq); h != "" {
		if seq, err = strconv.ParseUint(h, 10, 64); err != nil {
			return Batch{}, &schemas.DecodeError{Kind: engineBatchKind, Reason: "invalid " + schemas.HeaderBridgeSeq + " header", Err: err}
		}
	}
	evs, err := d.EngineBatch(data, worker, seq, lim)
	if err != nil {
		return Batch{}, err
	}
	return Batch{Events: evs, Epoch: m.header(schemas.HeaderBridgeEpoch)}, nil
}
