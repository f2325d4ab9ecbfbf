package dynamotrace

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// F64 is an f64 written as serde_json writes one: ryu's shortest
// round-trip digits, always with a '.' or an exponent ("12.0", "1e16"),
// and null when not finite.
type F64 float64

// MarshalJSON formats f as ryu's pretty format does (ryu::Buffer::format:
// a decimal point at positions 1..=16, "0.000ddd" down to 1e-5, else
// d.ddde±x).
func (f F64) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	if v == 0 {
		if math.Signbit(v) {
			return []byte("-0.0"), nil
		}
		return []byte("0.0"), nil
	}
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
		v = -v
	}
	// Shortest digits and exponent: d.ddde±x.
	e := strconv.FormatFloat(v, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := len(digits)
	kk := x + 1 // position of the decimal point from the first digit
	switch {
	case n <= kk && kk <= 16:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", kk-n))
		b.WriteString(".0")
	case 0 < kk && kk <= 16:
		b.WriteString(digits[:kk])
		b.WriteByte('.')
		b.WriteString(digits[kk:])
	case -5 < kk && kk <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -kk))
		b.WriteString(digits)
	case n == 1:
		b.WriteString(digits)
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(kk - 1))
	default:
		b.WriteString(digits[:1])
		b.WriteByte('.')
		b.WriteString(digits[1:])
		b.WriteByte('e')
		b.WriteString(strconv.Itoa(kk - 1))
	}
	return []byte(b.String()), nil
}

// RawJSON is a nested serde value given as JSON; written compact, as
// serde_json::to_vec writes everything. Empty is absent (omitempty).
type RawJSON = json.RawMessage

// Marshal writes r as serde_json::to_vec(&record) does.
func Marshal(r *Record) ([]byte, error) {
	c := *r
	if c.Request != nil && c.Request.Replay != nil && c.Request.Replay.InputSequenceHashes == nil {
		m, rp := *c.Request, *c.Request.Replay
		rp.InputSequenceHashes = []uint64{}
		m.Replay, c.Request = &rp, &m
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	return unescapeLineSeparators(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// unescapeLineSeparators undoes encoding/json's \u2028 and \u2029
// escapes, which serde_json writes raw. An escape is one only after an
// even run of backslashes (an odd one escapes the backslash itself).
func unescapeLineSeparators(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+1 < len(b) {
			if b[i+1] == 'u' && i+5 < len(b) && string(b[i+2:i+5]) == "202" && (b[i+5] == '8' || b[i+5] == '9') {
				out = append(out, "\u2028"...)
				if b[i+5] == '9' {
					out[len(out)-1] = 0xa9 // U+2029 is E2 80 A9
				}
				i += 5
				continue
			}
			out = append(out, b[i], b[i+1])
			i++
			continue
		}
		out = append(out, b[i])
	}
	return out
}
