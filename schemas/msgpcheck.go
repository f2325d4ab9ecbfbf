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

// ErrMsgpackTooDeep is the walk's error for containers nested past its
// bound; its text is the DecodeError reason every decoder gives for it.
var ErrMsgpackTooDeep error = &shapeError{reasonDeepMsgpack}

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

// checkMsgpackLimits walks the first msgpack object of b (walkMsgpack)
// and also rejects any array or map header claiming more than
// MaxArrayElems/MaxMapEntries, more than l.MaxTokens token_ids or
// output_token_ids, or more than l.MaxHeaders headers. The generated
// decoders make a slice of the claimed length before reading an element,
// so without this a 7-byte message claiming 4M tool calls would allocate
// 64 MiB; and msgp.Skip recurses once per level of an unknown field.
func checkMsgpackLimits(b []byte, l Limits) error {
	_, err := walkMsgpack(b, l.MaxDepth, &l)
	return err
}

// SkipMsgpack skips the first msgpack object of b without decoding it
// and returns the bytes after it. It rejects a container that claims more
// elements than the bytes after it could hold (msgp.ErrShortBytes: every
// element takes at least one byte) and non-empty containers nested more
// than maxDepth deep (ErrMsgpackTooDeep). Unlike msgp.Skip it does not
// recurse, so a hostile nesting costs no stack. Other errors are msgp's.
func SkipMsgpack(b []byte, maxDepth int) ([]byte, error) { return walkMsgpack(b, maxDepth, nil) }

// walkMsgpack is the one bounded msgpack walk: every decoder of msgpack
// from outside runs it (whole, or over a value it skips) before it trusts
// a header. With lim set it also applies checkMsgpackLimits's bounds.
//
// The walk is iterative, its stack is bounded by maxDepth and its work is
// linear in len(b). It returns msgp's own errors, or a *shapeError naming
// the field, so msgpReason can name them.
func walkMsgpack(b []byte, maxDepth int, lim *Limits) ([]byte, error) {
	type frame struct {
		left  int    // objects still to read in this container
		isMap bool   // keys at even left, counting down from 2n
		key   string // namedField of the last key read (maps)
	}
	var backing [16]frame
	stack := append(backing[:0], frame{left: 1})
	pending := 1 // objects still to read, at every nesting level
	for pending > 0 {
		top := len(stack) - 1
		if stack[top].left == 0 {
			stack = stack[:top]
			continue
		}
		if len(b) == 0 {
			return nil, msgp.ErrShortBytes
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
		case IsMsgpackArray(lead):
			var n uint32
			if n, b, err = msgp.ReadArrayHeaderBytes(b); err != nil {
				return nil, err
			}
			if lim != nil {
				if tokenField(field) && uint64(n) > uint64(lim.MaxTokens) {
					return nil, &shapeError{"too many " + field}
				}
				if n > MaxArrayElems {
					return nil, msgp.ErrLimitExceeded
				}
			}
			if n > 0 {
				if len(stack) > maxDepth {
					return nil, ErrMsgpackTooDeep
				}
				// min: a claim past the bytes fails below, whatever its size.
				k := int(min(uint64(n), uint64(len(b))+1))
				stack = append(stack, frame{left: k})
				pending += k
			}
		case IsMsgpackMap(lead):
			var n uint32
			if n, b, err = msgp.ReadMapHeaderBytes(b); err != nil {
				return nil, err
			}
			if lim != nil {
				if field == "headers" && uint64(n) > uint64(lim.MaxHeaders) {
					return nil, &shapeError{"too many headers"}
				}
				if n > MaxMapEntries {
					return nil, msgp.ErrLimitExceeded
				}
			}
			if n > 0 {
				if len(stack) > maxDepth {
					return nil, ErrMsgpackTooDeep
				}
				k := int(min(2*uint64(n), uint64(len(b))+1))
				stack = append(stack, frame{left: k, isMap: true})
				pending += k
			}
		case isKey && isStrLead(lead):
			var s []byte
			if s, b, err = msgp.ReadStringZC(b); err != nil {
				return nil, err
			}
			if lim != nil {
				f.key = namedField(s)
			}
		case fixedSize[lead] != 0:
			n := int(fixedSize[lead])
			if len(b) < n {
				return nil, msgp.ErrShortBytes
			}
			b = b[n:]
		default:
			// Other scalars, str, bin, ext: Skip does not recurse for these.
			if b, err = msgp.Skip(b); err != nil {
				return nil, err
			}
		}
		if isKey && !isStrLead(lead) {
			stack[top].key = ""
		}
		if pending > len(b) {
			return nil, msgp.ErrShortBytes
		}
	}
	return b, nil
}

// IsMsgpackArray reports whether c begins a msgpack array.
func IsMsgpackArray(c byte) bool { return c >= 0x90 && c <= 0x9f || c == 0xdc || c == 0xdd }

// IsMsgpackMap reports whether c begins a msgpack map.
func IsMsgpackMap(c byte) bool { return c >= 0x80 && c <= 0x8f || c == 0xde || c == 0xdf }

func isStrLead(c byte) bool { return c >= 0xa0 && c <= 0xbf || c == 0xd9 || c == 0xda || c == 0xdb }

// fixedSize is the encoded size of the fixed-width numbers, 0 for others.
var fixedSize = [256]uint8{
	0xcc: 2, 0xd0: 2, // uint8, int8
	0xcd: 3, 0xd1: 3, // uint16, int16
	0xce: 5, 0xd2: 5, 0xca: 5, // uint32, int32, float32
	0xcf: 9, 0xd3: 9, 0xcb: 9, // uint64, int64, float64
}
