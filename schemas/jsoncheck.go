package schemas

// checkJSON walks data once without decoding it and returns a reason when
// containers nest deeper than MaxDepth, an array holds more than
// MaxTokens elements ("too many token_ids" when the field is one of
// ours, else "JSON array too large"), "headers" holds more than
// MaxHeaders members, or another object more than MaxMapEntries. It
// returns "" otherwise, also for invalid JSON, which encoding/json then
// names. Its stack is bounded by MaxDepth and it allocates nothing else.
func (l Limits) checkJSON(data []byte) string {
	type frame struct {
		array bool
		n     int    // separators seen: elements or members - 1
		field string // namedField of the member this container is the value of
	}
	var buf [16]frame
	stack := buf[:0]
	lastKey := ""      // namedField of the innermost object's current member
	expectKey := false // the next string is a member name
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(data) {
				return "" // unterminated: encoding/json says so
			}
			if expectKey {
				lastKey = namedField(data[i+1 : j])
				expectKey = false
			}
			i = j
		case '{', '[':
			if len(stack) >= l.MaxDepth {
				return reasonDeepJSON
			}
			field := ""
			if n := len(stack); n > 0 && !stack[n-1].array {
				field = lastKey
			}
			stack = append(stack, frame{array: c == '[', field: field})
			expectKey = c == '{'
		case '}', ']':
			if len(stack) == 0 {
				return ""
			}
			stack = stack[:len(stack)-1]
			expectKey = false
		case ',':
			if len(stack) == 0 {
				return ""
			}
			f := &stack[len(stack)-1]
			f.n++
			// f.n+1 elements or members so far.
			switch {
			case f.array && f.n >= l.MaxTokens:
				if f.field != "" {
					return "too many " + f.field
				}
				return reasonBigJSONArr
			case !f.array && f.field == "headers" && f.n >= l.MaxHeaders:
				return "too many headers"
			case !f.array && f.n >= MaxMapEntries:
				return reasonBigJSONObj
			}
			expectKey = !f.array
		}
	}
	return ""
}
