package receiver

import (
	"fmt"
	"math"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// The worker-side retention action (actions.ActionRetain) and the version
// of it this package decodes. LegacyActionRetain, its name before
// hintstream.retain, is decoded as it for one release: the action is
// handed on as ActionRetain, counted (legacy_action) and logged once.
const (
	ActionRetain       = actions.ActionRetain
	LegacyActionRetain = actions.LegacyActionRetain
	RetainVersion      = "1.0"
)

// readRetain decodes a hintstream.retain@1.0 payload: every field but request_id,
// session_id, model and dp_rank is required (a retain without a TTL, a
// claim or an expiry cannot be acted on); priority 1..100, ttl_ms > 0,
// claim_id 1..256 bytes (vLLM's claim_id bound), revision >= 0.
func readRetain(b []byte, at string) (*schemas.RetainPayload, error) {
	var p schemas.RetainPayload
	seen := map[string]bool{}
	_, err := readMap(b, at, func(key string, v []byte) ([]byte, error) {
		seen[key] = true
		var n int64
		switch key {
		case "request_id":
			return readStr(v, at+".request_id", &p.RequestID)
		case "session_id":
			return readStr(v, at+".session_id", &p.SessionID)
		case "model":
			return readStr(v, at+".model", &p.Model)
		case "claim_id":
			rest, err := readStr(v, at+".claim_id", &p.ClaimID)
			if err == nil && (p.ClaimID == "" || len(p.ClaimID) > 256) {
				return nil, invalid(at+".claim_id", "Expected `str` of length 1..256")
			}
			return rest, err
		case "token_ids":
			ids, rest, err := readTokenIDs(v, at+".token_ids")
			p.TokenIDs = ids
			return rest, err
		case "dp_rank":
			rest, err := readInt(v, at+".dp_rank", 0, math.MaxUint32, &n)
			p.DpRank = uint32(n)
			return rest, err
		case "ttl_ms":
			// hintstream never sends a pin longer than Mooncake's soft-pin
			// maximum; a longer one is a hostile or broken sender's.
			return readInt(v, at+".ttl_ms", 1, actions.MaxPinTTL.Milliseconds(), &p.TTLMs)
		case "priority":
			return readInt(v, at+".priority", 1, 100, &p.Priority)
		case "revision":
			return readInt(v, at+".revision", 0, math.MaxInt64, &p.Revision)
		case "expires_at_ms":
			return readInt(v, at+".expires_at_ms", math.MinInt64, math.MaxInt64, &p.ExpiresAtMs)
		}
		return skip(v, at+"."+key)
	})
	if err != nil {
		return nil, err
	}
	return &p, required(seen, at, "token_ids", "ttl_ms", "priority", "claim_id", "revision", "expires_at_ms")
}

// readTokenIDs reads an array of u32 token ids. The common case (every
// element a msgpack int in range) costs no formatting: the element's path
// is built only for the error, which matters at a 2,048-token prompt
// (the path, formatted per element, took longer than the decode).
func readTokenIDs(b []byte, at string) ([]uint32, []byte, error) {
	c, rest, err := readArray(b, at)
	if err != nil {
		return nil, nil, err
	}
	ids := make([]uint32, c)
	for i := range ids {
		var v uint64
		switch msgp.NextType(rest) {
		case msgp.UintType:
			v, rest, err = msgp.ReadUint64Bytes(rest)
		case msgp.IntType:
			var n int64
			n, rest, err = msgp.ReadInt64Bytes(rest)
			if err == nil && n < 0 {
				return nil, nil, invalid(fmt.Sprintf("%s[%d]", at, i), "Expected `int` in 0..%d", uint64(math.MaxUint32))
			}
			v = uint64(n)
		default:
			return nil, nil, invalid(fmt.Sprintf("%s[%d]", at, i), "Expected `int`, got `%s`", typeName(rest))
		}
		if err != nil {
			return nil, nil, invalid(fmt.Sprintf("%s[%d]", at, i), "MessagePack data is malformed: %v", err)
		}
		if v > math.MaxUint32 {
			return nil, nil, invalid(fmt.Sprintf("%s[%d]", at, i), "Expected `int` in 0..%d", uint64(math.MaxUint32))
		}
		ids[i] = uint32(v)
	}
	return ids, rest, nil
}
