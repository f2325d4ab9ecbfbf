package schemas

import "github.com/tinylib/msgp/msgp"

// shapeError is a limit broken by the shape of the input (nesting, a
// named array's length), found before anything is decoded. Its reason is
// the DecodeError's.
type shapeError struct{ reason string }

func (e *shapeError) Error() string { return e.reason }

// Reasons of the shape checks, stable for metric labels and dead-letter
// headers.
const (
	reasonDeepMsgpack = "msgpack nested too deeply"
	reasonDeepJSON    = "JSON nested too deeply"
	reasonBigJSONArr  = "JSON array too large"
	reasonBigJSONObj  = "JSON object too large"
)

// namedField returns the field name a limit error may carry: only our own
// field names, so a hostile key cannot mint new metric labels.
func namedField(b []byte) string {
	switch string(b) {
	case "token_ids":
		return "token_ids"
	case "output_token_ids":
		return "output_token_ids"
	case "headers":
		return "headers"
	case "blocks":
		return "blocks"
	case "block_hashes":
		return "block_hashes"
	case "tool_calls":
		return "tool_calls"
	case "hint_endpoints":
		return "hint_endpoints"
	}
	return ""
}

// tokenField reports the fields whose length MaxTokens bounds.
func tokenField(name string) bool { return name == "token_ids" || name == "output_token_ids" }

// checkMsgpack is checkMsgpackLimits with DefaultLimits.
func checkMsgpack(b []byte) error { return checkMsgpackLimits(b, DefaultLimits()) }

// checkMsgpackLimits walks the first msgpack object of b without decoding
// it and rejects any array or map header that claims more elements than
// the bytes after it could hold (every element takes at least one byte),
// more than MaxArrayElems/MaxMapEntries, or (token_ids, output_token_ids)
// more than l.MaxTokens, and nesting deeper than l.MaxDepth. The generated
// decoders make a slice of the claimed length before reading an element,
// so without this a 7-byte message claiming 4M tool calls would allocate
// 64 MiB; and msgp.Skip recurses once per level of an unknown field.
//
// The walk is iterative, its stack is bounded by MaxDepth and its work is
// linear in len(b). It returns msgp's own errors, or a *shapeError naming
// the field, so msgpReason can name them.
func checkMsgpackLimits(b []byte, l Limits) error {
	type frame struct {
		left  int    // objects still to read in this container
		isMap bool   // keys at even left, counting down from 2n
		key   string // namedField of the last key read (maps)
	}
	stack := make([]frame, 1, 16)
	stack[0] = frame{left: 1}
	pending := 1 // objects still to read, at every nesting level
	for pending > 0 {
		top := len(stack) - 1
		if stack[top].left == 0 {
			stack = stack[:top]
			continue
		}
		if len(b) == 0 {
			return msgp.ErrShortBytes
		}
		f := &stack[top]
		isKey := f.isMap && f.left%2 == 0
		field := ""
		if f.isMap && !isKey {
			field = f.key
		}
		f.left--
		pending--
		lead := b[0]
		var err error
		switch {
		case lead <= 0x7f || lead >= 0xe0 || lead == 0xc0 || lead == 0xc2 || lead == 0xc3:
			b = b[1:] // fixint, nil, bool: the bulk of a token list
		case lead >= 0x90 && lead <= 0x9f || lead == 0xdc || lead == 0xdd:
			var n uint32
			if n, b, err = msgp.ReadArrayHeaderBytes(b); err != nil {
				return err
			}
			if tokenField(field) && uint64(n) > uint64(l.MaxTokens) {
				return &shapeError{"too many " + field}
			}
			if n > MaxArrayElems {
				return msgp.ErrLimitExceeded
			}
			if n > 0 {
				if len(stack) > l.MaxDepth {
					return &shapeError{reasonDeepMsgpack}
				}
				stack = append(stack, frame{left: int(n)})
				pending += int(n)
			}
		case lead >= 0x80 && lead <= 0x8f || lead == 0xde || lead == 0xdf:
			var n uint32
			if n, b, err = msgp.ReadMapHeaderBytes(b); err != nil {
				return err
			}
			if field == "headers" && uint64(n) > uint64(l.MaxHeaders) {
				return &shapeError{"too many headers"}
			}
			if n > MaxMapEntries {
				return msgp.ErrLimitExceeded
			}
			if n > 0 {
				if len(stack) > l.MaxDepth {
					return &shapeError{reasonDeepMsgpack}
				}
				stack = append(stack, frame{left: 2 * int(n), isMap: true})
				pending += 2 * int(n)
			}
		case isKey && (lead >= 0xa0 && lead <= 0xbf || lead == 0xd9 || lead == 0xda || lead == 0xdb):
			var s []byte
			if s, b, err = msgp.ReadStringZC(b); err != nil {
				return err
			}
			f.key = namedField(s)
		case fixedSize[lead] != 0:
			n := int(fixedSize[lead])
			if len(b) < n {
				return msgp.ErrShortBytes
			}
			b = b[n:]
		default:
			// Other scalars, str, bin, ext: Skip does not recurse for these.
			if b, err = msgp.Skip(b); err != nil {
				return err
			}
		}
		if isKey && !(lead >= 0xa0 && lead <= 0xbf || lead == 0xd9 || lead == 0xda || lead == 0xdb) {
			f = &stack[top]
			f.key = ""
		}
		if pending > len(b) {
			return msgp.ErrShortBytes
		}
	}
	return nil
}

// fixedSize is the encoded size of the fixed-width numbers, 0 for others.
var fixedSize = [256]uint8{
	0xcc: 2, 0xd0: 2, // uint8, int8
	0xcd: 3, 0xd1: 3, // uint16, int16
	0xce: 5, 0xd2: 5, 0xca: 5, // uint32, int32, float32
	0xcf: 9, 0xd3: 9, 0xcb: 9, // uint64, int64, float64
}
