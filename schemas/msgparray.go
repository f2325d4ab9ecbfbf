package schemas

import (
	"encoding/binary"
	"slices"

	"github.com/tinylib/msgp/msgp"
)

// AppendUint32Array appends vs to b as a msgpack array, each element in
// its smallest unsigned encoding: byte for byte what msgp's generated
// code writes for a []uint32 field (msgp.AppendArrayHeader, then
// msgp.AppendUint32 for each element). It grows b once, for five bytes
// an element (as the generated MarshalMsg reserves through Msgsize), and
// writes each element in place, where msgp.AppendUint32 checks the
// capacity and goes through AppendUint64 for each: a prefetch carries
// the prompt's token ids, 130K of them at an agentic turn, and encoding
// them one by one was a tenth of a whatif run's CPU.
func AppendUint32Array(b []byte, vs []uint32) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(vs)))
	start := len(b)
	b = slices.Grow(b, msgp.Uint32Size*len(vs))
	out := b[start : start+msgp.Uint32Size*len(vs)]
	j := 0
	for _, v := range vs {
		o := out[j : j+msgp.Uint32Size]
		switch {
		case v < 0x80: // positive fixint
			o[0] = byte(v)
			j++
		case v <= 0xff:
			o[0], o[1] = 0xcc, byte(v)
			j += 2
		case v <= 0xffff:
			o[0] = 0xcd
			binary.BigEndian.PutUint16(o[1:3], uint16(v))
			j += 3
		default:
			o[0] = 0xce
			binary.BigEndian.PutUint32(o[1:5], v)
			j += 5
		}
	}
	return b[:start+j]
}
