package schemas

import "github.com/tinylib/msgp/msgp"

// checkMsgpack walks the first msgpack object of b without decoding it and
// rejects any array or map header that claims more elements than the
// bytes after it could hold (every element takes at least one byte) or
// more than MaxArrayElems/MaxMapEntries. The generated decoders make a
// slice of the claimed length before reading an element, so without this
// a 7-byte message claiming 4M tool calls would allocate 64 MiB.
//
// The walk is iterative (no recursion limit needed) and its work is linear
// in len(b). It returns msgp's own errors so msgpReason can name them.
func checkMsgpack(b []byte) error {
	pending := 1 // objects still to read, at every nesting level
	for pending > 0 {
		if len(b) == 0 {
			return msgp.ErrShortBytes
		}
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
			if n > MaxArrayElems {
				return msgp.ErrLimitExceeded
			}
			pending += int(n)
		case lead >= 0x80 && lead <= 0x8f || lead == 0xde || lead == 0xdf:
			var n uint32
			if n, b, err = msgp.ReadMapHeaderBytes(b); err != nil {
				return err
			}
			if n > MaxMapEntries {
				return msgp.ErrLimitExceeded
			}
			pending += 2 * int(n)
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
