package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// shapeOf walks valid JSON with encoding/json's tokenizer and reports
// whether it breaks l: nesting deeper than MaxDepth, an array longer than
// MaxTokens, a "headers" object with more than MaxHeaders members, or
// another object with more than MaxMapEntries.
func shapeOf(t *testing.T, data []byte, l Limits) bool {
	t.Helper()
	type frame struct {
		array   bool
		n       int
		headers bool
		key     bool // an object's next token is a member name
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // a 600-digit number is valid JSON, not a float64
	var stack []frame
	value := func() { // a value has been read in the innermost container
		if len(stack) == 0 {
			return
		}
		f := &stack[len(stack)-1]
		f.n++
		if !f.array {
			f.key = true
		}
	}
	lastKey := ""
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return false
		}
		if err != nil {
			t.Fatalf("reference tokenizer on valid JSON: %v", err)
		}
		if len(stack) > 0 && !stack[len(stack)-1].array && stack[len(stack)-1].key {
			if d, ok := tok.(json.Delim); !ok || d != '}' {
				lastKey = tok.(string)
				stack[len(stack)-1].key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= l.MaxDepth {
				return true
			}
			headers := tok == json.Delim('{') && len(stack) > 0 && !stack[len(stack)-1].array && lastKey == "headers"
			stack = append(stack, frame{array: tok == json.Delim('['), headers: headers, key: tok == json.Delim('{')})
		case json.Delim('}'), json.Delim(']'):
			f := stack[len(stack)-1]
			switch {
			case f.array && f.n > l.MaxTokens, f.headers && f.n > l.MaxHeaders, !f.array && f.n > MaxMapEntries:
				return true
			}
			stack = stack[:len(stack)-1]
			value()
		default:
			value()
		}
	}
}

// FuzzCheckJSON checks the shape walk that runs before encoding/json
// against encoding/json's own tokenizer. Property: no panic; on valid
// JSON, a reason exactly when the shape breaks the limits, and then one
// of the shape reasons.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{"request_id":"a","token_ids":[1,2,3]}`, `{"token_ids":[1,2,3,4]}`, `[[[[[1]]]]]`, `[[[[1]]]]`,
		`{"headers":{"a":"1","b":"2","c":"3"}}`, `{"x":{"headers":{"a":"1","b":"2"}}}`,
		`{"a":"[,,,{","b":["\"",",","]"]}`, `{"blocks":[{},{},{},{}]}`, `"\\"`, `[]`, `{}`, `[[],[],[],[]]`,
		sampleRequestJSON,
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxTokens: 3, MaxHeaders: 2, MaxDepth: 4}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		reason := lim.checkJSON(data)
		if !json.Valid(data) {
			return // encoding/json names the error; any reason is fine
		}
		breaks := shapeOf(t, data, lim)
		switch {
		case breaks && reason == "":
			t.Fatalf("%q breaks the limits; checkJSON passed it", data)
		case !breaks && reason != "":
			t.Fatalf("%q is within the limits; checkJSON says %q", data, reason)
		}
		switch reason {
		case "", reasonDeepJSON, reasonBigJSONArr, reasonBigJSONObj, "too many headers",
			"too many token_ids", "too many output_token_ids", "too many blocks", "too many block_hashes",
			"too many tool_calls", "too many hint_endpoints":
		default:
			t.Fatalf("reason %q", reason)
		}
	})
}
