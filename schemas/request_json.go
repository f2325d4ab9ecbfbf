package schemas

import "unicode/utf8"

// encoding/json spends most of a wake-up's CPU on its token_ids: a
// 2,048-token request costs it hundreds of microseconds through
// reflection, per number. fastRequestJSON decodes the plain shape every
// frontend publishes (known lowercase keys once each, strings without
// escapes, token ids as plain integers) in one pass and allocates only the
// result. Anything else — escapes, nulls, unknown or repeated keys, an
// error of any kind — returns ok=false and the caller decodes with
// encoding/json, so accepted values and error reasons are exactly
// encoding/json's (FuzzFastRequestJSON checks the first against the
// second).

// fastRequestJSON decodes data (already checked to be valid UTF-8) into
// ev, or reports false and leaves ev to be overwritten.
func fastRequestJSON(data []byte, maxTokens, maxHeaders int, ev *RequestEvent) bool {
	p := jsonScan{b: data}
	p.ws()
	if !p.eat('{') {
		return false
	}
	var seen uint16
	p.ws()
	if p.eat('}') {
		return p.end()
	}
	for {
		p.ws()
		key, ok := p.plainString()
		if !ok {
			return false
		}
		p.ws()
		if !p.eat(':') {
			return false
		}
		p.ws()
		bit, ok := requestKeys[key]
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
		switch key {
		case "request_id":
			ev.RequestID, ok = p.plainString()
		case "session_id":
			ev.SessionID, ok = p.plainString()
		case "model":
			ev.Model, ok = p.plainString()
		case "lora_name":
			ev.LoraName, ok = p.plainString()
		case "cache_salt":
			ev.CacheSalt, ok = p.plainString()
		case "extra_key":
			ev.ExtraKey, ok = p.plainString()
		case "token_ids":
			ev.TokenIDs, ok = p.uint32s(ev.TokenIDs[:0], maxTokens)
		case "headers":
			ev.Headers, ok = p.stringMap(maxHeaders)
		case "received_at_ms":
			ev.ReceivedAtMs, ok = p.int64()
		}
		if !ok {
			return false
		}
		p.ws()
		if p.eat('}') {
			return p.end()
		}
		if !p.eat(',') {
			return false
		}
	}
}

var requestKeys = map[string]uint16{
	"request_id": 1 << 0, "session_id": 1 << 1, "model": 1 << 2, "token_ids": 1 << 3,
	"headers": 1 << 4, "lora_name": 1 << 5, "cache_salt": 1 << 6, "received_at_ms": 1 << 7,
	"extra_key": 1 << 8,
}

// jsonScan reads the subset of JSON above from b at i.
type jsonScan struct {
	b []byte
	i int
	// reuse lends a RouterEvent decode the memory of the previous one
	// (DecodeRouterEventInto); its zero value allocates afresh. A value,
	// not a pointer, so that it stays on the decoder's stack.
	reuse routerReuse
}

func (p *jsonScan) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScan) eat(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// end reports whether only whitespace is left.
func (p *jsonScan) end() bool {
	p.ws()
	return p.i == len(p.b)
}

// plainString reads a string with no escapes and no control characters.
func (p *jsonScan) plainString() (string, bool) {
	if !p.eat('"') {
		return "", false
	}
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c == '"':
			s := string(p.b[start:p.i])
			p.i++
			return s, true
		case c == '\\' || c < 0x20:
			return "", false
		}
		p.i++
	}
	return "", false
}

// digits reads a JSON integer's digits (no sign) as a uint64; false on a
// leading zero before more digits, a fraction or exponent, or overflow
// past 19 digits.
func (p *jsonScan) digits() (uint64, bool) {
	start := p.i
	var v uint64
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		v = v*10 + uint64(p.b[p.i]-'0')
		p.i++
	}
	n := p.i - start
	if n == 0 || n > 19 || (n > 1 && p.b[start] == '0') {
		return 0, false
	}
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	return v, true
}

// uint32s reads an array of token ids into dst's memory when it has the
// room (DecodeRequestInto), else into a new slice.
func (p *jsonScan) uint32s(dst []uint32, max int) ([]uint32, bool) {
	if !p.eat('[') {
		return nil, false
	}
	// Size the slice once, to the commas before the first ']' plus one:
	// exact for a well-formed array, and counting (vectorised) costs less
	// than a bound of a token per two bytes would, which allocates three
	// times the ids of a 2,048-token prompt.
	b, i := p.b, p.i
	out := dst[:0]
	if need := min(max, p.countUntil(',', ']')+1); cap(out) < need {
		out = make([]uint32, 0, need)
	}
	// The loop keeps b and i in registers: this is the hot loop of a
	// wake-up's decode.
	for first := true; ; first = false {
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		if first && i < len(b) && b[i] == ']' {
			p.i = i + 1
			return out, true
		}
		start := i
		var v uint64
		for i < len(b) && b[i]-'0' <= 9 && i-start < 11 {
			v = v*10 + uint64(b[i]-'0')
			i++
		}
		n := i - start
		if n == 0 || n > 10 || v > 1<<32-1 || (n > 1 && b[start] == '0') || len(out) == max {
			return nil, false
		}
		out = append(out, uint32(v))
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		if i == len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			p.i = i + 1
			return out, true
		default: // a fraction, an exponent, anything else
			return nil, false
		}
	}
}

func (p *jsonScan) int64() (int64, bool) {
	neg := p.eat('-')
	v, ok := p.digits()
	if !ok || v > 1<<63-1 {
		return 0, false
	}
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// stringMap reads an object of plain strings; a repeated key, which
// encoding/json would merge, is left to it.
func (p *jsonScan) stringMap(max int) (map[string]string, bool) {
	if !p.eat('{') {
		return nil, false
	}
	m := map[string]string{}
	p.ws()
	if p.eat('}') {
		return m, true
	}
	for {
		p.ws()
		k, ok := p.plainString()
		if !ok {
			return nil, false
		}
		p.ws()
		if !p.eat(':') {
			return nil, false
		}
		p.ws()
		v, ok := p.plainString()
		// Past max, the checked path decides: a hostile map must not
		// grow here unbounded.
		if _, dup := m[k]; !ok || dup || len(m) == max {
			return nil, false
		}
		m[k] = v
		p.ws()
		if p.eat('}') {
			return m, true
		}
		if !p.eat(',') {
			return nil, false
		}
	}
}

// fastJSON decodes a JSON request with fastRequestJSON when it can; the
// checks before it are decodeJSON's, in the same order.
func (l Limits) fastJSON(data []byte, contentType string, ev *RequestEvent) bool {
	if len(data) > l.MaxBytes {
		return false
	}
	if f, ok := DetectFormat(contentType, data); !ok || f != FormatJSON || !utf8.Valid(data) {
		return false
	}
	return fastRequestJSON(data, l.MaxTokens, l.MaxHeaders, ev)
}
