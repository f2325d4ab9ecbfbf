package engine

import (
	"strconv"
	"strings"

	"github.com/hintstream/hintstream/schemas"
)

// hintHeaders are the request headers hintstream acts on. A frontend may
// forward them inside the event body (its headers map) or as NATS message
// headers (nats pub -H); both count, names case-insensitive either way,
// and the body wins on conflict.
var hintHeaders = [...]string{schemas.HeaderWakeup, schemas.HeaderSimToolCall}

// mergeNATSHeaders copies the hint headers present as NATS message headers
// into req.Headers unless the body already names them (in any case). The
// copy is under the canonical lower-case name so the rest of the pipeline
// looks in one place.
func mergeNATSHeaders(req *schemas.RequestEvent, nh map[string][]string) {
	if len(nh) == 0 {
		return
	}
	for _, name := range hintHeaders {
		if _, ok := schemas.LookupHeader(req.Headers, name); ok {
			continue // the body wins
		}
		for k, vs := range nh {
			if strings.EqualFold(k, name) && len(vs) > 0 {
				if req.Headers == nil {
					req.Headers = make(map[string]string, 1)
				}
				req.Headers[name] = vs[0]
				break
			}
		}
	}
}

// headerUnrecognised reports whether a request carries a header that
// looks like one of the hint headers but is not: a near-miss name
// (x-dynamo-wakeup, x-dynamo-experimental-wake-up, a trailing space) or
// the right name with a value hintstream does not understand. Such a
// request is counted apart (requests.header_unrecognised) so that a
// frontend that got the header slightly wrong sees it, instead of its
// wake-ups passing silently as plain requests. body is the event's map;
// nh the NATS message headers.
func headerUnrecognised(body map[string]string, nh map[string][]string) bool {
	for k, v := range body {
		if nearMiss(k, v) {
			return true
		}
	}
	for k, vs := range nh {
		for _, v := range vs {
			if nearMiss(k, v) {
				return true
			}
		}
	}
	return false
}

// nearMiss is headerUnrecognised's test of one header.
func nearMiss(name, value string) bool {
	switch {
	case strings.EqualFold(name, schemas.HeaderWakeup):
		_, ok := wakeupValue(value)
		return !ok
	case strings.EqualFold(name, schemas.HeaderSimToolCall):
		_, ok := simToolValue(value)
		return !ok
	}
	n := squash(name)
	return strings.Contains(n, "wakeup") || strings.Contains(n, "simtool") ||
		(strings.Contains(n, "dynamo") && strings.Contains(n, "toolcall"))
}

// squash lower-cases s and keeps only its letters and digits, so that
// x-Dynamo_Wake-Up and xdynamowakeup compare equal.
func squash(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		}
	}
	return string(b)
}

// wakeupValue parses the wake-up header's value: empty, 1, true, yes or on
// ask for a wake-up; 0, false, no or off say no. ok is false for any other
// value (neither a wake-up nor silently plain: see headerUnrecognised).
func wakeupValue(v string) (wake, ok bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// simToolValue parses the sim-tool-call header's value: a positive number
// of milliseconds the tool will take, or a word that only announces a tool
// call (empty, true, yes, on, or a tool's name made of letters, digits,
// '_', '-' and '.'), which gives ms = 1 (time unknown). ok is false for a
// value that is neither, such as a negative or fractional number; the
// request is still announced (package pins reads any value so) but counted.
func simToolValue(v string) (ms int64, ok bool) {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return max(n, 1), n >= 0 // 0: announced, time unknown (as package pins reads it)
	}
	if v == "" {
		return 1, true
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return 0, false
		}
	}
	if c := v[0]; c == '-' || c == '.' || c >= '0' && c <= '9' {
		return 0, false // a number that did not parse
	}
	return 1, true
}
