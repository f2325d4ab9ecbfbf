package actions

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
	"github.com/zeebo/xxh3"
)

// The wake-up prefetch action, as workers dispatch on it.
const (
	ActionPrefetch  = "kv.prefetch"
	PrefetchVersion = "1.0"
)

// ErrInvalidHint is matched (errors.Is) by every error for a hint that can
// never be built or sent: retrying it cannot help.
var ErrInvalidHint = errors.New("actions: invalid hint")

// Prefetch asks the worker at DpRank to load the KV of TokenIDs from the
// shared store into its device cache before the real request arrives. The
// worker ignores it after ExpiresAt.
type Prefetch struct {
	RequestID string // the wake-up request; required, it keys the message id
	SessionID string
	Model     string
	TokenIDs  []uint32
	DpRank    uint32
	ExpiresAt time.Time // required
	WorkerID  uint64    // the chosen worker; receivers bound to another drop it
	CacheSalt string    // the request's cache namespace; empty: none (omitted on the wire)
	// SequenceHashes (at SequenceBlockSize) and BlockHashes name a prompt
	// known without TokenIDs (schemas.PrefetchPayload).
	SequenceHashes    []uint64
	SequenceBlockSize uint32
	BlockHashes       []uint64
}

// PrefetchMessageID is the envelope message_id for the wake-up request
// requestID: "wake-" and the 16 lower-case hex digits of XXH3-64 of the id.
// It is deterministic so that a receiver can drop the duplicate sent when
// the same trigger is processed twice (redelivery, replay).
func PrefetchMessageID(requestID string) string {
	b := make([]byte, 0, 5+16)
	b = append(b, "wake-"...)
	h := xxh3.HashString(requestID)
	// Zero-pad: strconv drops leading zeros, the id has a fixed width.
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[(h>>uint(i))&0xf])
	}
	return string(b)
}

// NewPrefetchEnvelope builds the envelope (protocol "0.1") holding one
// kv.prefetch@1.0 action for p. It fails with ErrInvalidHint when
// RequestID is empty, ExpiresAt is zero, or a string is not valid UTF-8
// (msgspec would reject it on the worker).
func NewPrefetchEnvelope(p Prefetch) (*schemas.KvHintsEnvelope, error) {
	payload, err := prefetchPayload(p)
	if err != nil {
		return nil, err
	}
	raw, err := payload.MarshalMsg(make([]byte, 0, payload.Msgsize()))
	if err != nil {
		return nil, fmt.Errorf("actions: encode prefetch payload: %w", err)
	}
	env := prefetchEnvelope(PrefetchMessageID(p.RequestID))
	env.Actions[0].Payload = raw
	return env, nil
}

// EncodePrefetch is EncodeEnvelope(NewPrefetchEnvelope(p)), byte for byte,
// in one pass: the payload is written straight into the envelope instead
// of being encoded, copied, and checked again (for a 2,048-token wake-up
// that was a fifth of hintstream's CPU per hint). It also returns the
// message id.
func EncodePrefetch(p Prefetch) (body []byte, messageID string, err error) {
	return AppendPrefetch(nil, p)
}

// AppendPrefetch is EncodePrefetch writing the envelope into dst[:0]'s
// memory (grown when too small), for a caller that reuses its buffers.
func AppendPrefetch(dst []byte, p Prefetch) (body []byte, messageID string, err error) {
	payload, err := prefetchPayload(p)
	if err != nil {
		return nil, "", err
	}
	messageID = PrefetchMessageID(p.RequestID)
	env := prefetchEnvelope(messageID)
	// The payload is the last field of the action, the action the last
	// element of actions, and actions the last field of the envelope: so
	// an empty-map placeholder is the final byte of the encoding, and the
	// real payload can take its place.
	env.Actions[0].Payload = msgp.Raw{0x80}
	// The token ids, the bulk of a prefetch, are written by
	// schemas.AppendUint32Array in place of the empty array the payload
	// is encoded with (the same bytes as the generated encoder's).
	tokens := payload.TokenIDs
	payload.TokenIDs = nil
	b, err := env.MarshalMsg(slices.Grow(dst[:0], env.Msgsize()+payload.Msgsize()+msgp.Uint32Size*len(tokens)))
	if err == nil {
		at := len(b) - 1
		if b, err = payload.MarshalMsg(b[:at]); err == nil && len(tokens) > 0 {
			b, err = spliceUint32s(b, at, "token_ids", tokens)
		}
	}
	if err != nil {
		return nil, "", fmt.Errorf("actions: encode prefetch %s: %w", messageID, err)
	}
	return b, messageID, nil
}

// spliceUint32s replaces the value of field, an empty array, in the
// msgpack map that b[at:] ends with, by the array of vs
// (schemas.AppendUint32Array): the field is found by reading the map's
// keys, not by its place, so a field added to the payload cannot move it.
func spliceUint32s(b []byte, at int, field string, vs []uint32) ([]byte, error) {
	n, rest, err := msgp.ReadMapHeaderBytes(b[at:])
	for ; err == nil && n > 0; n-- {
		var key []byte
		if key, rest, err = msgp.ReadMapKeyZC(rest); err != nil {
			break
		}
		if string(key) != field {
			rest, err = msgp.Skip(rest)
			continue
		}
		if len(rest) == 0 || rest[0] != 0x90 {
			return nil, fmt.Errorf("%s is not an empty array", field)
		}
		// The fields after it (a few scalars) are set aside, the array
		// written in place of the empty one, and they follow it.
		var stash [256]byte
		tail := append(stash[:0], rest[1:]...)
		b = schemas.AppendUint32Array(b[:len(b)-len(rest)], vs)
		return append(b, tail...), nil
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("no field %s", field)
}

func prefetchPayload(p Prefetch) (schemas.PrefetchPayload, error) {
	if p.RequestID == "" {
		return schemas.PrefetchPayload{}, fmt.Errorf("%w: prefetch without request_id", ErrInvalidHint)
	}
	if p.ExpiresAt.IsZero() {
		return schemas.PrefetchPayload{}, fmt.Errorf("%w: prefetch %s without expiry", ErrInvalidHint, p.RequestID)
	}
	for _, f := range [...]struct{ name, s string }{
		{"request_id", p.RequestID}, {"session_id", p.SessionID}, {"model", p.Model}, {"cache_salt", p.CacheSalt},
	} {
		if !utf8.ValidString(f.s) {
			return schemas.PrefetchPayload{}, fmt.Errorf("%w: prefetch %s is not valid UTF-8", ErrInvalidHint, f.name)
		}
	}
	return schemas.PrefetchPayload{
		RequestID:   p.RequestID,
		SessionID:   p.SessionID,
		Model:       p.Model,
		TokenIDs:    p.TokenIDs,
		DpRank:      p.DpRank,
		ExpiresAtMs: p.ExpiresAt.UnixMilli(),
		WorkerID:    p.WorkerID,
		CacheSalt:   p.CacheSalt,

		SequenceHashes: p.SequenceHashes, SequenceBlockSize: p.SequenceBlockSize, BlockHashes: p.BlockHashes,
	}, nil
}

func prefetchEnvelope(id string) *schemas.KvHintsEnvelope {
	return &schemas.KvHintsEnvelope{
		ProtocolVersion: schemas.ProtocolVersion,
		MessageID:       id,
		Actions: []schemas.KvHintAction{{
			ActionID:      actionID(id, 0),
			ActionType:    ActionPrefetch,
			ActionVersion: PrefetchVersion,
		}},
	}
}

// actionID names the i-th action of message id, unique within the message.
func actionID(messageID string, i int) string {
	return messageID + "/" + strconv.Itoa(i)
}

// EncodeEnvelope encodes env as the msgpack map receivers decode. Each
// action's payload must already be exactly one msgpack map (it is copied
// verbatim); anything else fails with ErrInvalidHint rather than sending
// bytes a receiver cannot decode.
func EncodeEnvelope(env *schemas.KvHintsEnvelope) ([]byte, error) {
	if env == nil {
		return nil, fmt.Errorf("%w: nil envelope", ErrInvalidHint)
	}
	for i, a := range env.Actions {
		if err := checkPayload(a.Payload); err != nil {
			return nil, fmt.Errorf("%w: action %d (%s) payload: %v", ErrInvalidHint, i, a.ActionType, err)
		}
	}
	b, err := env.MarshalMsg(make([]byte, 0, env.Msgsize()))
	if err != nil {
		return nil, fmt.Errorf("actions: encode envelope %s: %w", env.MessageID, err)
	}
	return b, nil
}

func checkPayload(p msgp.Raw) error {
	if len(p) == 0 {
		return errors.New("empty")
	}
	if t := msgp.NextType(p); t != msgp.MapType {
		return fmt.Errorf("is a msgpack %s, not a map", t)
	}
	rest, err := msgp.Skip(p)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("%d trailing bytes", len(rest))
	}
	return nil
}
