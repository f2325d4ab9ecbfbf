package schemas

import (
	"bytes"
	"encoding/binary"
	"unicode/utf8"
)

// The generated decoder is safe only behind checkMsgpackLimits, a walk of
// the whole message before it; together with a call per token id that is
// most of a msgpack wake-up's decode. fastRequestMsgpack reads the shape
// our frontends write (a map of known str keys once each, str values,
// token ids as positive fixint or uint8/16/32, a str→str headers map) in
// one pass, checking each container's claimed length against the limits
// and the bytes left before it allocates. Anything else returns ok=false
// and the caller decodes with the checked path, so accepted values and
// error reasons stay exactly that path's (FuzzFastRequestMsgpack).

// fastRequestDepth is how deep the accepted shape nests (the event, then
// token_ids or headers): under a smaller MaxDepth the checked path decides.
const fastRequestDepth = 2

// fastMsgpack decodes a msgpack request with fastRequestMsgpack when it
// can; the checks before it are decode's, in the same order.
func (l Limits) fastMsgpack(data []byte, contentType string, ev *RequestEvent) bool {
	if len(data) > l.MaxBytes || l.MaxDepth < fastRequestDepth {
		return false
	}
	if f, ok := DetectFormat(contentType, data); !ok || f != FormatMsgpack {
		return false
	}
	return fastRequestMsgpack(bytes.TrimLeft(data, " \t\r\n"), l, ev)
}

// fastRequestMsgpack decodes b into ev, or reports false and leaves ev to
// be overwritten. Strings longer than l.MaxString or not UTF-8 are left
// to the checked path, which names them.
func fastRequestMsgpack(b []byte, l Limits, ev *RequestEvent) bool {
	r := msgpScan{b: b}
	n, ok := r.mapHeader()
	if !ok || n > 8 { // eight known keys, none repeated
		return false
	}
	var seen uint16
	for range n {
		key, ok := r.str()
		if !ok {
			return false
		}
		bit, ok := requestKeys[string(key)]
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		switch string(key) {
		case "request_id":
			ev.RequestID, ok = r.text(l.MaxString)
		case "session_id":
			ev.SessionID, ok = r.text(l.MaxString)
		case "model":
			ev.Model, ok = r.text(l.MaxString)
		case "lora_name":
			ev.LoraName, ok = r.text(l.MaxString)
		case "cache_salt":
			ev.CacheSalt, ok = r.text(l.MaxString)
		case "extra_key":
			ev.ExtraKey, ok = r.text(l.MaxString)
		case "token_ids":
			ev.TokenIDs, ok = r.uint32s(ev.TokenIDs[:0], l.MaxTokens)
		case "headers":
			ev.Headers, ok = r.stringMap(l.MaxHeaders, l.MaxString)
		case "received_at_ms":
			ev.ReceivedAtMs, ok = r.int64()
		}
		if !ok {
			return false
		}
	}
	return r.i == len(r.b)
}

// msgpScan reads the subset of msgpack above from b at i.
type msgpScan struct {
	b []byte
	i int
}

// need reports whether n more bytes are left.
func (r *msgpScan) need(n int) bool { return n >= 0 && len(r.b)-r.i >= n }

// length reads the size that follows a 16- or 32-bit header.
func (r *msgpScan) length(lead, b16, b32 byte) (int, bool) {
	switch lead {
	case b16:
		if !r.need(2) {
			return 0, false
		}
		n := binary.BigEndian.Uint16(r.b[r.i:])
		r.i += 2
		return int(n), true
	case b32:
		if !r.need(4) {
			return 0, false
		}
		n := binary.BigEndian.Uint32(r.b[r.i:])
		r.i += 4
		return int(n), true
	}
	return 0, false
}

func (r *msgpScan) mapHeader() (int, bool) {
	if !r.need(1) {
		return 0, false
	}
	lead := r.b[r.i]
	r.i++
	if lead >= 0x80 && lead <= 0x8f {
		return int(lead & 0x0f), true
	}
	return r.length(lead, 0xde, 0xdf)
}

func (r *msgpScan) arrayHeader() (int, bool) {
	if !r.need(1) {
		return 0, false
	}
	lead := r.b[r.i]
	r.i++
	if lead >= 0x90 && lead <= 0x9f {
		return int(lead & 0x0f), true
	}
	return r.length(lead, 0xdc, 0xdd)
}

// str reads a str (never bin, which the checked path reads only as a key)
// without copying it.
func (r *msgpScan) str() ([]byte, bool) {
	if !r.need(1) {
		return nil, false
	}
	lead := r.b[r.i]
	r.i++
	var n int
	switch {
	case lead >= 0xa0 && lead <= 0xbf:
		n = int(lead & 0x1f)
	case lead == 0xd9:
		if !r.need(1) {
			return nil, false
		}
		n = int(r.b[r.i])
		r.i++
	default:
		var ok bool
		if n, ok = r.length(lead, 0xda, 0xdb); !ok {
			return nil, false
		}
	}
	if !r.need(n) {
		return nil, false
	}
	s := r.b[r.i : r.i+n]
	r.i += n
	return s, true
}

// text reads a str value of at most max bytes of UTF-8.
func (r *msgpScan) text(max int) (string, bool) {
	s, ok := r.str()
	if !ok || len(s) > max || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// uint32s reads an array of token ids into dst's memory when it has the
// room (DecodeRequestInto), else into a new slice.
func (r *msgpScan) uint32s(dst []uint32, max int) ([]uint32, bool) {
	n, ok := r.arrayHeader()
	// Every element takes at least a byte: a claim the bytes cannot back
	// allocates nothing.
	if !ok || n > max || n > MaxArrayElems || n > len(r.b)-r.i {
		return nil, false
	}
	if n == 0 {
		return nil, true // the generated decoder's nil[:0]
	}
	out := dst[:0]
	if cap(out) < n {
		out = make([]uint32, n)
	}
	out = out[:n]
	b, i := r.b, r.i
	k := 0
	// The hot loop of a wake-up's decode. Token ids mix sizes at random,
	// so while 5 bytes are left it loads them whole and picks the value
	// by arithmetic on the lead byte rather than by branching on it: a
	// positive fixint (lead < 0x80) is 1 byte, uint8/16/32 (0xcc, 0xcd,
	// 0xce) carry nb = 1, 2, 4 bytes after the lead.
	for ; k < len(out) && len(b)-i >= 5; k++ {
		lead := b[i]
		if lead >= 0x80 && lead-0xcc > 2 {
			return nil, false
		}
		hi := uint(lead >> 7) // 0: fixint, 1: uint8/16/32
		nb := hi << (lead & 3)
		w := uint64(binary.BigEndian.Uint32(b[i+1 : i+5]))
		out[k] = uint32(w>>(32-8*nb) + uint64(lead)*uint64(1^hi))
		i += int(1 + nb)
	}
	for ; k < len(out); k++ {
		if i >= len(b) {
			return nil, false
		}
		lead := b[i]
		if lead >= 0x80 && lead-0xcc > 2 {
			return nil, false
		}
		hi := uint(lead >> 7)
		nb := int(hi << (lead & 3))
		if len(b)-i-1 < nb {
			return nil, false
		}
		var v uint32 = uint32(lead) * uint32(1^hi)
		for _, c := range b[i+1 : i+1+nb] {
			v = v<<8 | uint32(c)
		}
		out[k] = v
		i += 1 + nb
	}
	r.i = i
	return out, true
}

// stringMap reads a str→str map; a repeated key, which the checked path
// would merge, is left to it.
func (r *msgpScan) stringMap(max, maxString int) (map[string]string, bool) {
	n, ok := r.mapHeader()
	if !ok || n > max || n > MaxMapEntries || n > (len(r.b)-r.i)/2 {
		return nil, false
	}
	m := make(map[string]string, n)
	for range n {
		k, ok := r.text(maxString)
		if !ok {
			return nil, false
		}
		v, ok := r.text(maxString)
		if _, dup := m[k]; !ok || dup {
			return nil, false
		}
		m[k] = v
	}
	return m, true
}

// int64 reads any msgpack integer that fits an int64.
func (r *msgpScan) int64() (int64, bool) {
	if !r.need(1) {
		return 0, false
	}
	lead := r.b[r.i]
	r.i++
	if lead <= 0x7f || lead >= 0xe0 {
		return int64(int8(lead)), true
	}
	size := int(fixedSize[lead])
	if size == 0 || lead == 0xca || lead == 0xcb || !r.need(size-1) {
		return 0, false // not an integer, or truncated
	}
	p := r.b[r.i:]
	r.i += size - 1
	switch lead {
	case 0xcc:
		return int64(p[0]), true
	case 0xcd:
		return int64(binary.BigEndian.Uint16(p)), true
	case 0xce:
		return int64(binary.BigEndian.Uint32(p)), true
	case 0xcf:
		v := binary.BigEndian.Uint64(p)
		return int64(v), v <= 1<<63-1
	case 0xd0:
		return int64(int8(p[0])), true
	case 0xd1:
		return int64(int16(binary.BigEndian.Uint16(p))), true
	case 0xd2:
		return int64(int32(binary.BigEndian.Uint32(p))), true
	}
	return int64(binary.BigEndian.Uint64(p)), true // 0xd3
}
