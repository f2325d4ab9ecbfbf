package cluster

import (
	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/tinylib/msgp/msgp"
)

// DecodeNoTokens is Decode without the prefetches' token ids
// (PrefetchPayload.TokenIDs is nil): the simulator applies a prefetch by
// its request id to the prompt it holds, so it reads every byte Decode
// reads and checks every token as Decode does, but keeps none. A
// prefetch of a 130K-token prompt is about 650 KB of msgpack: Decode
// copies it (the action's msgp.Raw), walks it twice through msgp's
// generic skip and decode and makes a 520 KB slice, which was a third of
// a whatif run's CPU on agentic traffic. Any input the fast path does
// not read to the end goes to Decode, so the result (Err set or not, and
// every field but the token ids) is Decode's (FuzzDecodeNoTokens).
func DecodeNoTokens(b []byte) Hint {
	if h, ok := decodeNoTokens(b); ok {
		return h
	}
	h := Decode(b)
	for i := range h.Prefetches {
		h.Prefetches[i].TokenIDs = nil
	}
	return h
}

// The generated decoders' limits (schemas/envelope_gen.go): a map or an
// array longer than these fails them.
const (
	decodeLimitMaps   = 4096
	decodeLimitArrays = 4194304
	// msgp's nesting limit for Skip (msgp/defs.go recursionLimit).
	skipRecursionLimit = 100000
)

// decodeNoTokens is the fast path: ok false when anything is not as the
// engine writes it or fails, for Decode to judge.
func decodeNoTokens(b []byte) (Hint, bool) {
	var h Hint
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil || n > decodeLimitMaps {
		return h, false
	}
	type action struct {
		typ      string
		payload  []byte
		prefetch *schemas.PrefetchPayload // decoded in place: typ came first
	}
	var acts []action
	for ; n > 0; n-- {
		var field []byte
		if field, b, err = msgp.ReadMapKeyZC(b); err != nil {
			return h, false
		}
		switch msgp.UnsafeString(field) {
		case "protocol_version":
			_, b, err = msgp.ReadStringZC(b)
		case "message_id":
			h.MessageID, b, err = msgp.ReadStringBytes(b)
		case "actions":
			var na uint32
			if na, b, err = msgp.ReadArrayHeaderBytes(b); err != nil || na > decodeLimitArrays {
				return h, false
			}
			// As the generated decoder: a repeated key replaces the list.
			acts = make([]action, 0, min(na, 16))
			for ; na > 0; na-- {
				var a action
				var nf uint32
				if nf, b, err = msgp.ReadMapHeaderBytes(b); err != nil || nf > decodeLimitMaps {
					return h, false
				}
				for ; nf > 0; nf-- {
					if field, b, err = msgp.ReadMapKeyZC(b); err != nil {
						return h, false
					}
					switch msgp.UnsafeString(field) {
					case "action_id", "action_version":
						_, b, err = msgp.ReadStringZC(b)
					case "action_type":
						if a.payload != nil {
							return h, false // a type after the payload: Decode's order of reading
						}
						var t []byte
						t, b, err = msgp.ReadStringZC(b)
						a.typ = string(t)
					case "payload":
						if a.payload != nil {
							return h, false // twice: the last one counts
						}
						// A prefetch (the engine writes the type first) is
						// read once, in place; the rest is stepped over and
						// read below.
						var rest []byte
						if a.typ == actions.ActionPrefetch && !msgp.IsNil(b) {
							var p schemas.PrefetchPayload
							var ok bool
							if p, rest, ok = decodePrefetchNoTokens(b); !ok {
								return h, false
							}
							a.prefetch = &p
						} else if rest, err = skipValue(b, 0); err != nil {
							return h, false
						}
						a.payload, b = b[:len(b)-len(rest)], rest
					default:
						b, err = skipValue(b, 0)
					}
					if err != nil {
						return h, false
					}
				}
				acts = append(acts, a)
			}
		default:
			b, err = skipValue(b, 0)
		}
		if err != nil {
			return h, false
		}
	}
	for _, a := range acts {
		switch a.typ {
		case actions.ActionPrefetch:
			if a.prefetch == nil {
				// Not read in place (a nil or missing payload): msgp.Raw
				// holds a nil as empty, which Decode fails.
				return h, false
			}
			h.Prefetches = append(h.Prefetches, *a.prefetch)
		case actions.ActionPin:
			var p schemas.PinPayload
			if msgp.IsNil(a.payload) {
				return h, false // msgp.Raw holds a nil as empty: Decode fails it
			}
			if _, err := p.UnmarshalMsg(a.payload); err != nil {
				return h, false
			}
			h.Pins = append(h.Pins, p)
		default:
			return h, false
		}
	}
	return h, true
}

// decodePrefetchNoTokens is schemas.PrefetchPayload.UnmarshalMsg with the
// token ids read, checked as uint32s and dropped; it returns what
// follows the payload.
func decodePrefetchNoTokens(b []byte) (schemas.PrefetchPayload, []byte, bool) {
	var p schemas.PrefetchPayload
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil || n > decodeLimitMaps {
		return p, b, false
	}
	for ; n > 0; n-- {
		var field []byte
		if field, b, err = msgp.ReadMapKeyZC(b); err != nil {
			return p, b, false
		}
		switch msgp.UnsafeString(field) {
		case "request_id":
			p.RequestID, b, err = msgp.ReadStringBytes(b)
		case "session_id":
			p.SessionID, b, err = msgp.ReadStringBytes(b)
		case "model":
			p.Model, b, err = msgp.ReadStringBytes(b)
		case "token_ids":
			b, err = skipUint32s(b)
		case "dp_rank":
			p.DpRank, b, err = msgp.ReadUint32Bytes(b)
		case "expires_at_ms":
			p.ExpiresAtMs, b, err = msgp.ReadInt64Bytes(b)
		case "worker_id":
			p.WorkerID, b, err = msgp.ReadUint64Bytes(b)
		default:
			// Depth 1: Decode's msgp.Raw skips the payload as a whole
			// first, this value one level into it.
			b, err = skipValue(b, 1)
		}
		if err != nil {
			return p, b, false
		}
	}
	return p, b, true
}

// skipUint32s reads an array of uint32s as the generated decoder does
// (each by msgp.ReadUint32Bytes), keeping none: the encodings an
// encoder writes for them are stepped over inline, anything else is
// read by msgp.
func skipUint32s(b []byte) ([]byte, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return b, err
	}
	if n > decodeLimitArrays {
		return b, msgp.ErrLimitExceeded
	}
	for ; n > 0; n-- {
		// Four 32-bit tokens at a time: most of a long prompt's.
		for n >= 4 && len(b) >= 20 && b[0] == 0xce && b[5] == 0xce && b[10] == 0xce && b[15] == 0xce {
			b, n = b[20:], n-4
		}
		if n == 0 {
			break
		}
		if len(b) == 0 {
			return b, msgp.ErrShortBytes
		}
		step := 0
		switch lead := b[0]; {
		case lead < 0x80: // positive fixint
			step = 1
		case lead == 0xcc: // uint8
			step = 2
		case lead == 0xcd: // uint16
			step = 3
		case lead == 0xce: // uint32
			step = 5
		}
		if step > 0 && len(b) >= step {
			b = b[step:]
			continue
		}
		if _, b, err = msgp.ReadUint32Bytes(b); err != nil {
			return b, err
		}
	}
	return b, nil
}

// skipValue is msgp.Skip (depth as msgp counts it) with integers and
// the elements of arrays and maps stepped over inline: it ends where
// msgp.Skip does and fails where it fails.
func skipValue(b []byte, depth int) ([]byte, error) {
	if depth >= skipRecursionLimit {
		return b, msgp.ErrRecursion
	}
	if len(b) == 0 {
		return b, msgp.ErrShortBytes
	}
	lead := b[0]
	step := 0
	switch {
	case lead < 0x80 || lead >= 0xe0: // fixints
		step = 1
	case lead == 0xcc || lead == 0xd0:
		step = 2
	case lead == 0xcd || lead == 0xd1:
		step = 3
	case lead == 0xce || lead == 0xd2 || lead == 0xca:
		step = 5
	case lead == 0xcf || lead == 0xd3 || lead == 0xcb:
		step = 9
	case lead&0xf0 == 0x90 || lead == 0xdc || lead == 0xdd: // arrays
		n, rest, err := msgp.ReadArrayHeaderBytes(b)
		if err != nil {
			return b, err
		}
		return skipN(rest, int64(n), depth)
	case lead&0xf0 == 0x80 || lead == 0xde || lead == 0xdf: // maps
		n, rest, err := msgp.ReadMapHeaderBytes(b)
		if err != nil {
			return b, err
		}
		return skipN(rest, 2*int64(n), depth)
	default: // strings, binaries, extensions, nil, booleans: no nesting
		return msgp.Skip(b)
	}
	if len(b) < step {
		return b, msgp.ErrShortBytes
	}
	return b[step:], nil
}

func skipN(b []byte, n int64, depth int) ([]byte, error) {
	var err error
	for ; n > 0; n-- {
		if b, err = skipValue(b, depth+1); err != nil {
			return b, err
		}
	}
	return b, nil
}
