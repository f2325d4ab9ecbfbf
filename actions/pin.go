package actions

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
	"github.com/zeebo/xxh3"
)

// The tool-call pin action, as the Mooncake master dispatches on it.
const (
	ActionPin  = "kv.pin"
	PinVersion = "1.0"
)

// Pin asks the Mooncake master to keep the objects Keys resident (a soft
// pin) for TTL, at Priority, because a miss would recompute Tokens tokens.
// A later pin of the same Slot replaces it; a Pin with TTL 0 releases the
// Slot.
type Pin struct {
	Trigger  string        // the request id that caused the pin; required, it keys the message id
	Slot     string        // required
	Keys     []string      // Mooncake object keys (see ObjectKeys); required unless TTL is 0
	TTL      time.Duration // 0 releases the slot; otherwise in (0, MaxPinTTL]
	Priority int           // 1..100 (see Priority); 0 is allowed for a release
	Tokens   int           // tokens a miss would recompute; >= 0
	// Revision orders this message among the slot's pins, renewals and
	// releases from every member of a group (the slot record's KV
	// revision): a receiver applies it only when it is above the last
	// it applied to Slot. 0 leaves it out (unordered).
	Revision uint64
	// BlockHashes name the pages by WorkerID's engine block hashes when
	// no Keys can be derived (a prompt known only by its sequence
	// hashes); a pin needs Keys or BlockHashes.
	BlockHashes []uint64
	WorkerID    uint64
}

// PinMessageID is the envelope message_id for a pin (release false) or a
// release (true) caused by trigger: "pin-" or "unpin-" and the 16
// lower-case hex digits of XXH3-64 of trigger. It is deterministic so that
// a receiver can drop the duplicate sent when the same trigger is processed
// twice, while a pin and its release stay distinct messages.
func PinMessageID(trigger string, release bool) string {
	prefix := "pin-"
	if release {
		prefix = "unpin-"
	}
	b := make([]byte, 0, len(prefix)+16)
	b = append(b, prefix...)
	return string(appendHex64(b, xxh3.HashString(trigger)))
}

// appendHex64 appends h as exactly 16 lower-case hex digits.
func appendHex64(b []byte, h uint64) []byte {
	for i := 60; i >= 0; i -= 4 {
		b = append(b, "0123456789abcdef"[(h>>uint(i))&0xf])
	}
	return b
}

// NewPinEnvelope builds the envelope (protocol "0.1") holding one
// kv.pin@1.0 action for p; ttl_ms is TTL in milliseconds, rounded up so
// that a positive TTL never encodes as a release. It fails with
// ErrInvalidHint when Trigger or Slot is empty, TTL is negative or above
// MaxPinTTL, a pin has no keys, an empty key or a Priority outside 1..100,
// Tokens is negative, or a string is not valid UTF-8 (msgspec would reject
// it on the master). A release with Priority 0 is sent with priority 1,
// the receiver's minimum.
func NewPinEnvelope(p Pin) (*schemas.KvHintsEnvelope, error) {
	release := p.TTL == 0
	if err := validatePin(&p, release); err != nil {
		return nil, err
	}
	prio := p.Priority
	if release && prio == 0 {
		prio = 1
	}
	payload := schemas.PinPayload{
		Slot:     p.Slot,
		Keys:     p.Keys,
		TTLMs:    int64((p.TTL + time.Millisecond - 1) / time.Millisecond),
		Priority: int64(prio),
		Tokens:   int64(p.Tokens),
		Revision: p.Revision,

		BlockHashes: p.BlockHashes, WorkerID: p.WorkerID,
	}
	raw, err := payload.MarshalMsg(make([]byte, 0, payload.Msgsize()))
	if err != nil {
		return nil, fmt.Errorf("actions: encode pin payload: %w", err)
	}
	id := PinMessageID(p.Trigger, release)
	return &schemas.KvHintsEnvelope{
		ProtocolVersion: schemas.ProtocolVersion,
		MessageID:       id,
		Actions: []schemas.KvHintAction{{
			ActionID:      actionID(id, 0),
			ActionType:    ActionPin,
			ActionVersion: PinVersion,
			Payload:       raw,
		}},
	}, nil
}

func validatePin(p *Pin, release bool) error {
	switch {
	case p.Trigger == "":
		return fmt.Errorf("%w: pin without trigger", ErrInvalidHint)
	case p.Slot == "":
		return fmt.Errorf("%w: pin %s without slot", ErrInvalidHint, p.Trigger)
	case p.TTL < 0 || p.TTL > MaxPinTTL:
		return fmt.Errorf("%w: pin %s ttl %v outside [0, %v]", ErrInvalidHint, p.Trigger, p.TTL, MaxPinTTL)
	case p.Tokens < 0:
		return fmt.Errorf("%w: pin %s tokens %d is negative", ErrInvalidHint, p.Trigger, p.Tokens)
	case !release && len(p.Keys) == 0 && len(p.BlockHashes) == 0:
		return fmt.Errorf("%w: pin %s has no keys", ErrInvalidHint, p.Trigger)
	case (p.Priority < 1 || p.Priority > 100) && !(release && p.Priority == 0):
		return fmt.Errorf("%w: pin %s priority %d outside 1..100", ErrInvalidHint, p.Trigger, p.Priority)
	}
	if !utf8.ValidString(p.Trigger) || !utf8.ValidString(p.Slot) {
		return fmt.Errorf("%w: pin trigger or slot is not valid UTF-8", ErrInvalidHint)
	}
	for i, k := range p.Keys {
		if k == "" || !utf8.ValidString(k) {
			return fmt.Errorf("%w: pin %s keys[%d] is empty or not valid UTF-8", ErrInvalidHint, p.Trigger, i)
		}
	}
	return nil
}
