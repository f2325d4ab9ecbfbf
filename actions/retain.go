package actions

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
	"github.com/zeebo/xxh3"
)

// The worker-side retention action (hintstream run --retain-on-worker):
// the worker's adapter keeps a tool-call session's KV in the engine's own
// cache, for clusters without a Mooncake master to pin in. It is
// hintstream's own action, named in hintstream's namespace: vLLM defines
// a kv.retain@1.0 of its own (scope, directives; vllm/v1/kv_hints), and
// no action type of ours may be one an engine defines. The receiver
// still takes the old name, LegacyActionRetain, for one release.
const (
	ActionRetain       = "hintstream.retain"
	LegacyActionRetain = "kv.retain"
	RetainVersion      = "1.0"
	// MaxRetainClaim is the longest claim id: vLLM's vllm.set_priority
	// takes claim_id of 1..256 characters (vllm/v1/kv_hints/actions.py
	// at ffeb400564cafb694280912a1d54a9a676295fb1), which the adapter
	// passes on.
	MaxRetainClaim = 256
)

// Retain asks the worker that served Trigger to keep TokenIDs cached for
// TTL at Priority, under ClaimID at Revision. ExpiresAt bounds when the
// worker may still act on it.
type Retain struct {
	Trigger   string // the request id of the tool-call turn; required, it keys the message id
	SessionID string
	Model     string
	TokenIDs  []uint32 // required, non-empty
	DpRank    uint32
	TTL       time.Duration // in (0, MaxPinTTL]
	Priority  int           // 1..100
	ClaimID   string        // 1..MaxRetainClaim bytes
	Revision  int64         // >= 0; grows per claim
	ExpiresAt time.Time     // required
}

// RetainMessageID is the envelope message_id of the retain for trigger
// at revision: "retain-" and 16 hex digits of XXH3-64 of both, so a
// repeat of the same retain is dropped by the receiver while a renewal
// (a higher revision) is not.
func RetainMessageID(trigger string, revision int64) string {
	b := make([]byte, 0, 7+16)
	b = append(b, "retain-"...)
	return string(appendHex64(b, xxh3.HashString(trigger+"\x00"+strconv.FormatInt(revision, 10))))
}

// EncodeRetain builds and encodes the envelope (protocol "0.1") holding
// one hintstream.retain@1.0 action for r, and returns its message id. It fails
// with ErrInvalidHint for a Retain no receiver could act on.
func EncodeRetain(r Retain) (body []byte, messageID string, err error) {
	if err := validateRetain(r); err != nil {
		return nil, "", err
	}
	p := schemas.RetainPayload{RequestID: r.Trigger, SessionID: r.SessionID, Model: r.Model, TokenIDs: r.TokenIDs,
		DpRank: r.DpRank, TTLMs: int64((r.TTL + time.Millisecond - 1) / time.Millisecond), Priority: int64(r.Priority),
		ClaimID: r.ClaimID, Revision: r.Revision, ExpiresAtMs: r.ExpiresAt.UnixMilli()}
	messageID = RetainMessageID(r.Trigger, r.Revision)
	env := &schemas.KvHintsEnvelope{ProtocolVersion: schemas.ProtocolVersion, MessageID: messageID,
		Actions: []schemas.KvHintAction{{ActionID: actionID(messageID, 0), ActionType: ActionRetain,
			ActionVersion: RetainVersion, Payload: AppendRetainPayload(nil, &p)}}}
	body, err = EncodeEnvelope(env)
	return body, messageID, err
}

// AppendRetainPayload appends p as the msgpack map receivers decode (str
// keys, str values, non-negative integers as uint).
func AppendRetainPayload(b []byte, p *schemas.RetainPayload) []byte {
	b = msgp.AppendMapHeader(b, 10)
	b = msgp.AppendString(msgp.AppendString(b, "request_id"), p.RequestID)
	b = msgp.AppendString(msgp.AppendString(b, "session_id"), p.SessionID)
	b = msgp.AppendString(msgp.AppendString(b, "model"), p.Model)
	b = msgp.AppendArrayHeader(msgp.AppendString(b, "token_ids"), uint32(len(p.TokenIDs)))
	for _, t := range p.TokenIDs {
		b = msgp.AppendUint32(b, t)
	}
	b = msgp.AppendUint32(msgp.AppendString(b, "dp_rank"), p.DpRank)
	b = msgp.AppendInt64(msgp.AppendString(b, "ttl_ms"), p.TTLMs)
	b = msgp.AppendInt64(msgp.AppendString(b, "priority"), p.Priority)
	b = msgp.AppendString(msgp.AppendString(b, "claim_id"), p.ClaimID)
	b = msgp.AppendInt64(msgp.AppendString(b, "revision"), p.Revision)
	b = msgp.AppendInt64(msgp.AppendString(b, "expires_at_ms"), p.ExpiresAtMs)
	return b
}

func validateRetain(r Retain) error {
	switch {
	case r.Trigger == "":
		return fmt.Errorf("%w: retain without trigger", ErrInvalidHint)
	case len(r.TokenIDs) == 0:
		return fmt.Errorf("%w: retain %s without tokens", ErrInvalidHint, r.Trigger)
	case r.TTL <= 0 || r.TTL > MaxPinTTL:
		return fmt.Errorf("%w: retain %s ttl %v outside (0, %v]", ErrInvalidHint, r.Trigger, r.TTL, MaxPinTTL)
	case r.Priority < 1 || r.Priority > 100:
		return fmt.Errorf("%w: retain %s priority %d outside 1..100", ErrInvalidHint, r.Trigger, r.Priority)
	case r.ClaimID == "" || len(r.ClaimID) > MaxRetainClaim:
		return fmt.Errorf("%w: retain %s claim id of %d bytes, want 1..%d", ErrInvalidHint, r.Trigger, len(r.ClaimID), MaxRetainClaim)
	case r.Revision < 0:
		return fmt.Errorf("%w: retain %s revision %d is negative", ErrInvalidHint, r.Trigger, r.Revision)
	case r.ExpiresAt.IsZero():
		return fmt.Errorf("%w: retain %s without expiry", ErrInvalidHint, r.Trigger)
	}
	for _, s := range [...]string{r.Trigger, r.SessionID, r.Model, r.ClaimID} {
		if !utf8.ValidString(s) {
			return fmt.Errorf("%w: retain %s has a string that is not valid UTF-8", ErrInvalidHint, r.Trigger)
		}
	}
	return nil
}
