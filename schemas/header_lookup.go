package schemas

import "strings"

// LookupHeader looks a request header up in an event's headers map. The
// schema asks for lower-case names; a careless frontend's mixed case is
// accepted (the exact name first) rather than silently lost.
func LookupHeader(h map[string]string, name string) (string, bool) {
	if v, ok := h[name]; ok {
		return v, true
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}
