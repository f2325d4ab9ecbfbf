package receiver

import (
	"fmt"
	"math"

	"github.com/hintstream/hintstream/schemas"
)

// The worker-side retention action (actions.ActionRetain) and the version
// of it this package decodes.
const (
	ActionRetain  = "kv.retain"
	RetainVersion = "1.0"
)

// readRetain decodes a kv.retain@1.0 payload: every field but request_id,
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
			c, rest, err := readArray(v, at+".token_ids")
			if err != nil {
				return nil, err
			}
			p.TokenIDs = make([]uint32, c)
			for i := range p.TokenIDs {
				if rest, err = readInt(rest, fmt.Sprintf("%s.token_ids[%d]", at, i), 0, math.MaxUint32, &n); err != nil {
					return nil, err
				}
				p.TokenIDs[i] = uint32(n)
			}
			return rest, nil
		case "dp_rank":
			rest, err := readInt(v, at+".dp_rank", 0, math.MaxUint32, &n)
			p.DpRank = uint32(n)
			return rest, err
		case "ttl_ms":
			return readInt(v, at+".ttl_ms", 1, math.MaxInt64, &p.TTLMs)
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
