package receiver

import (
	"errors"
	"fmt"
	"math"

	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// Action types and the version of each this package decodes.
const (
	ActionPrefetch  = "kv.prefetch"
	ActionPin       = "kv.pin"
	PrefetchVersion = "1.0"
	PinVersion      = "1.0"
)

// ErrInvalid wraps every reason an envelope is rejected; the message says
// where, in the style of msgspec ("Expected `str`, got `bin` - at
// `$.message_id`").
var ErrInvalid = errors.New("invalid KvHintsEnvelope")

// Envelope is a decoded KvHintsEnvelope.
type Envelope struct {
	ProtocolVersion string
	MessageID       string
	Actions         []Action
}

// Action is one decoded action. Exactly one of Prefetch, Pin and Retain
// is set for kv.prefetch@1.0, kv.pin@1.0 and hintstream.retain@1.0 (or
// its old name kv.retain@1.0, whose Type is then ActionRetain and Legacy
// true); an action of another type or version keeps only its raw payload
// (a receiver ignores what it does not know, as the Python side does).
type Action struct {
	ID, Type, Version string
	Prefetch          *schemas.PrefetchPayload
	Pin               *schemas.PinPayload
	Retain            *schemas.RetainPayload // hintstream.retain@1.0 (retain.go)
	// Legacy: the action came under a retired name (LegacyActionRetain).
	Legacy bool
	Raw    msgp.Raw
}

func invalid(at, format string, args ...any) error {
	return fmt.Errorf("%w: %s - at `%s`", ErrInvalid, fmt.Sprintf(format, args...), at)
}

// Decode decodes b as the Python side does (SGLang
// python/sglang/srt/managers/kv_hints.py, msgspec structs, at commit
// 27d8ebb4500f860ca4fc1b6f2d3149809de106cc): a msgpack map whose
// protocol_version, message_id, actions and each action's action_id,
// action_type, action_version and payload are required; kv.pin@1.0 needs
// every payload field, kv.prefetch@1.0 request_id and token_ids; strings as msgpack str (never bin), integers as
// integers within their range (token ids u32, dp_rank u32, priority
// 1..100, ttl_ms, tokens and the optional revision >= 0), map keys as str, no trailing bytes.
// Unknown fields and payload keys are skipped.
func Decode(b []byte) (*Envelope, error) {
	var env Envelope
	seen := map[string]bool{}
	rest, err := readMap(b, "$", func(key string, v []byte) ([]byte, error) {
		seen[key] = true
		switch key {
		case "protocol_version":
			return readStr(v, "$.protocol_version", &env.ProtocolVersion)
		case "message_id":
			return readStr(v, "$.message_id", &env.MessageID)
		case "actions":
			return readActions(v, &env.Actions)
		}
		return skip(v, "$."+key)
	})
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, invalid("$", "%d trailing bytes", len(rest))
	}
	if err := required(seen, "$", "protocol_version", "message_id", "actions"); err != nil {
		return nil, err
	}
	return &env, nil
}

func required(seen map[string]bool, at string, names ...string) error {
	for _, n := range names {
		if !seen[n] {
			return invalid(at, "Object missing required field `%s`", n)
		}
	}
	return nil
}

// readMap reads a map whose keys are all str, calling field with each key
// and the bytes at its value; field returns the bytes after the value.
func readMap(b []byte, at string, field func(key string, v []byte) ([]byte, error)) ([]byte, error) {
	if t := msgp.NextType(b); t != msgp.MapType {
		return nil, invalid(at, "Expected `object`, got `%s`", typeName(b))
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, invalid(at, "MessagePack data is malformed: %v", err)
	}
	for i := uint32(0); i < n; i++ {
		var key string
		if b, err = readStr(b, "key in "+at, &key); err != nil {
			return nil, err
		}
		if b, err = field(key, b); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func readStr(b []byte, at string, dst *string) ([]byte, error) {
	if t := msgp.NextType(b); t != msgp.StrType {
		return nil, invalid(at, "Expected `str`, got `%s`", typeName(b))
	}
	s, rest, err := msgp.ReadStringBytes(b)
	if err != nil {
		return nil, invalid(at, "MessagePack data is malformed: %v", err)
	}
	*dst = s
	return rest, nil
}

// readInt reads an integer in [lo, hi].
func readInt(b []byte, at string, lo, hi int64, dst *int64) ([]byte, error) {
	switch msgp.NextType(b) {
	case msgp.IntType:
		v, rest, err := msgp.ReadInt64Bytes(b)
		if err != nil {
			return nil, invalid(at, "MessagePack data is malformed: %v", err)
		}
		if v < lo || v > hi {
			return nil, invalid(at, "Expected `int` in %d..%d", lo, hi)
		}
		*dst = v
		return rest, nil
	case msgp.UintType:
		v, rest, err := msgp.ReadUint64Bytes(b)
		if err != nil {
			return nil, invalid(at, "MessagePack data is malformed: %v", err)
		}
		if v > uint64(hi) {
			return nil, invalid(at, "Expected `int` in %d..%d", lo, hi)
		}
		*dst = int64(v)
		return rest, nil
	}
	return nil, invalid(at, "Expected `int`, got `%s`", typeName(b))
}

// readUint64 reads a non-negative integer of up to 64 bits (worker ids
// use all of them).
func readUint64(b []byte, at string, dst *uint64) ([]byte, error) {
	if msgp.NextType(b) == msgp.UintType {
		v, rest, err := msgp.ReadUint64Bytes(b)
		if err != nil {
			return nil, invalid(at, "MessagePack data is malformed: %v", err)
		}
		*dst = v
		return rest, nil
	}
	var n int64
	rest, err := readInt(b, at, 0, math.MaxInt64, &n)
	*dst = uint64(n)
	return rest, err
}

func readArray(b []byte, at string) (uint32, []byte, error) {
	if t := msgp.NextType(b); t != msgp.ArrayType {
		return 0, nil, invalid(at, "Expected `array`, got `%s`", typeName(b))
	}
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return 0, nil, invalid(at, "MessagePack data is malformed: %v", err)
	}
	if int(n) > len(rest) { // each element takes at least a byte
		return 0, nil, invalid(at, "MessagePack data is malformed: array of %d in %d bytes", n, len(rest))
	}
	return n, rest, nil
}

func readActions(b []byte, dst *[]Action) ([]byte, error) {
	n, b, err := readArray(b, "$.actions")
	if err != nil {
		return nil, err
	}
	out := make([]Action, 0, n)
	for i := uint32(0); i < n; i++ {
		at := fmt.Sprintf("$.actions[%d]", i)
		var a Action
		var payload []byte
		seen := map[string]bool{}
		b, err = readMap(b, at, func(key string, v []byte) ([]byte, error) {
			seen[key] = true
			switch key {
			case "action_id":
				return readStr(v, at+".action_id", &a.ID)
			case "action_type":
				return readStr(v, at+".action_type", &a.Type)
			case "action_version":
				return readStr(v, at+".action_version", &a.Version)
			case "payload":
				rest, err := skip(v, at+".payload")
				if err != nil {
					return nil, err
				}
				payload = v[:len(v)-len(rest)]
				return rest, nil
			}
			return skip(v, at+"."+key)
		})
		if err != nil {
			return nil, err
		}
		if err := required(seen, at, "action_id", "action_type", "action_version", "payload"); err != nil {
			return nil, err
		}
		if err := readPayload(&a, payload, at+".payload"); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	*dst = out
	return b, nil
}

// readPayload decodes the payload of a known action type; any payload
// must be a map with str keys (dict[str, Any]).
func readPayload(a *Action, b []byte, at string) error {
	a.Raw = msgp.Raw(b)
	var err error
	switch {
	case a.Type == ActionPrefetch && a.Version == PrefetchVersion:
		a.Prefetch, err = readPrefetch(b, at)
	case a.Type == ActionPin && a.Version == PinVersion:
		a.Pin, err = readPin(b, at)
	case a.Type == ActionRetain && a.Version == RetainVersion:
		a.Retain, err = readRetain(b, at)
	case a.Type == LegacyActionRetain && a.Version == RetainVersion:
		a.Retain, err = readRetain(b, at)
		a.Type, a.Legacy = ActionRetain, true
	default:
		_, err = readMap(b, at, func(key string, v []byte) ([]byte, error) { return skip(v, at+"."+key) })
	}
	return err
}

func readPrefetch(b []byte, at string) (*schemas.PrefetchPayload, error) {
	var p schemas.PrefetchPayload
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
		case "token_ids":
			ids, rest, err := readTokenIDs(v, at+".token_ids") // retain.go
			p.TokenIDs = ids
			return rest, err
		case "dp_rank":
			rest, err := readInt(v, at+".dp_rank", 0, math.MaxUint32, &n)
			p.DpRank = uint32(n)
			return rest, err
		case "expires_at_ms":
			return readInt(v, at+".expires_at_ms", math.MinInt64, math.MaxInt64, &p.ExpiresAtMs)
		case "worker_id":
			return readUint64(v, at+".worker_id", &p.WorkerID)
		case "cache_salt":
			return readStr(v, at+".cache_salt", &p.CacheSalt)
		}
		return skip(v, at+"."+key)
	})
	if err != nil {
		return nil, err
	}
	// Only request_id and token_ids are required, as in the shared
	// kv_hints_envelope vector: SGLang's envelope leaves a payload's schema
	// to its consumer (managers/kv_hints.py), and a prefetch without
	// expires_at_ms never expires (ExpiresAtMs 0).
	return &p, required(seen, at, "request_id", "token_ids")
}

func readPin(b []byte, at string) (*schemas.PinPayload, error) {
	var p schemas.PinPayload
	seen := map[string]bool{}
	_, err := readMap(b, at, func(key string, v []byte) ([]byte, error) {
		seen[key] = true
		switch key {
		case "slot":
			return readStr(v, at+".slot", &p.Slot)
		case "keys":
			c, rest, err := readArray(v, at+".keys")
			if err != nil {
				return nil, err
			}
			p.Keys = make([]string, c)
			for i := range p.Keys {
				if rest, err = readStr(rest, fmt.Sprintf("%s.keys[%d]", at, i), &p.Keys[i]); err != nil {
					return nil, err
				}
			}
			return rest, nil
		case "ttl_ms":
			return readInt(v, at+".ttl_ms", 0, math.MaxInt64, &p.TTLMs)
		case "priority":
			return readInt(v, at+".priority", 1, 100, &p.Priority)
		case "tokens":
			return readInt(v, at+".tokens", 0, math.MaxInt64, &p.Tokens)
		case "revision":
			// Optional: absent (0) is an unordered sender (docs/wire.md).
			var n int64
			rest, err := readInt(v, at+".revision", 0, math.MaxInt64, &n)
			p.Revision = uint64(n)
			return rest, err
		}
		return skip(v, at+"."+key)
	})
	if err != nil {
		return nil, err
	}
	return &p, required(seen, at, "slot", "keys", "ttl_ms", "priority", "tokens")
}

// skip steps over one object of any type.
func skip(b []byte, at string) ([]byte, error) {
	rest, err := msgp.Skip(b)
	if err != nil {
		return nil, invalid(at, "MessagePack data is malformed: %v", err)
	}
	return rest, nil
}

// typeName names the next msgpack object's type as msgspec does.
func typeName(b []byte) string {
	switch msgp.NextType(b) {
	case msgp.StrType:
		return "str"
	case msgp.BinType:
		return "bytes"
	case msgp.MapType:
		return "object"
	case msgp.ArrayType:
		return "array"
	case msgp.Float64Type, msgp.Float32Type:
		return "float"
	case msgp.BoolType:
		return "bool"
	case msgp.IntType, msgp.UintType:
		return "int"
	case msgp.NilType:
		return "null"
	case msgp.InvalidType:
		return "end of data"
	}
	return "ext"
}
