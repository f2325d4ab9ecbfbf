package schemas_test

// The JSON Schemas under schemas/jsonschema/ (draft 2020-12) against the
// decoders: every input of the fuzz seed corpora and the shared vectors
// that a schema accepts, the decoder accepts, and the reverse. msgpack
// inputs are compared through their JSON equivalent (a msgpack bin or ext
// has none and stands for a value no schema type matches). Besides the
// corpora, every example message (jsonschema/examples/, shown in
// docs/wire.md) is mutated one field at a time. One difference is
// allowed and counted: a JSON message with a null member that the JSON
// decoder reads as absent (encoding/json) while the schema, like the
// msgpack decoder, refuses null there. What JSON Schema cannot
// express (docs/wire.md lists it: key case, duplicate keys, 1.0 for 1,
// byte-length limits) is not in these inputs.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/emit/receiver"
	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tinylib/msgp/msgp"
)

const schemaBase = "https://github.com/hintstream/hintstream/schemas/jsonschema/"

func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	files, err := filepath.Glob("jsonschema/*.schema.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if id, _ := doc.(map[string]any)["$id"].(string); id != schemaBase+filepath.Base(f) {
			t.Fatalf("%s: $id %q, want %q", f, id, schemaBase+filepath.Base(f))
		}
		if err := c.AddResource(schemaBase+filepath.Base(f), doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, f := range files {
		s, err := c.Compile(schemaBase + filepath.Base(f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".schema.json")] = s
	}
	return out
}

// binValue stands for a msgpack bin or ext: JSON has no such value, so no
// schema type matches it (the validator is given a Go type it rejects).
type binValue struct{}

// toJSONValue converts a message to what a JSON Schema validator sees:
// JSON parsed with json.Number, msgpack walked into the same shapes.
func toJSONValue(data []byte) (any, error) {
	f, ok := schemas.DetectFormat("", data)
	if !ok {
		return nil, errors.New("neither JSON nor msgpack")
	}
	if f == schemas.FormatJSON {
		return jsonschema.UnmarshalJSON(bytes.NewReader(data))
	}
	v, rest, err := msgpValue(bytes.TrimLeft(data, " \t\r\n"), 0)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, errors.New("trailing bytes")
	}
	return v, nil
}

func msgpValue(b []byte, depth int) (any, []byte, error) {
	if depth > 64 {
		return nil, nil, errors.New("too deep")
	}
	switch msgp.NextType(b) {
	case msgp.StrType:
		s, rest, err := msgp.ReadStringBytes(b)
		return s, rest, err
	case msgp.BinType, msgp.ExtensionType, msgp.Complex64Type, msgp.Complex128Type, msgp.TimeType:
		rest, err := msgp.Skip(b)
		return binValue{}, rest, err
	case msgp.IntType:
		n, rest, err := msgp.ReadInt64Bytes(b)
		return json.Number(strconv.FormatInt(n, 10)), rest, err
	case msgp.UintType:
		n, rest, err := msgp.ReadUint64Bytes(b)
		return json.Number(strconv.FormatUint(n, 10)), rest, err
	case msgp.Float32Type, msgp.Float64Type:
		f, rest, err := msgp.ReadFloat64Bytes(b)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
			return binValue{}, rest, nil
		}
		return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), rest, err
	case msgp.BoolType:
		v, rest, err := msgp.ReadBoolBytes(b)
		return v, rest, err
	case msgp.NilType:
		rest, err := msgp.ReadNilBytes(b)
		return nil, rest, err
	case msgp.ArrayType:
		n, rest, err := msgp.ReadArrayHeaderBytes(b)
		if err != nil || int(n) > len(rest) {
			return nil, nil, errors.New("bad array")
		}
		out := make([]any, n)
		for i := range out {
			if out[i], rest, err = msgpValue(rest, depth+1); err != nil {
				return nil, nil, err
			}
		}
		return out, rest, nil
	case msgp.MapType:
		n, rest, err := msgp.ReadMapHeaderBytes(b)
		if err != nil || int(n) > len(rest) {
			return nil, nil, errors.New("bad map")
		}
		out := make(map[string]any, n)
		for range n {
			if msgp.NextType(rest) != msgp.StrType {
				return nil, nil, errors.New("non-str key") // no JSON object has one
			}
			var k string
			if k, rest, err = msgp.ReadStringBytes(rest); err != nil {
				return nil, nil, err
			}
			if out[k], rest, err = msgpValue(rest, depth+1); err != nil {
				return nil, nil, err
			}
		}
		return out, rest, nil
	}
	return nil, nil, errors.New("invalid msgpack")
}

// readCorpus reads the []byte arguments of a go-fuzz corpus directory.
func readCorpus(t *testing.T, dir string) [][]byte {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "[]byte(") || !strings.HasSuffix(line, ")") {
				continue
			}
			s, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, []byte(s))
			break // the message is the first argument
		}
	}
	if len(out) == 0 {
		t.Fatalf("empty corpus %s", dir)
	}
	return out
}

type schemaCase struct {
	schema  string
	corpora []string
	extra   func(t *testing.T) [][]byte
	decode  func(data []byte) error
}

func TestJSONSchemasMatchDecoders(t *testing.T) {
	sch := compileSchemas(t)
	envelopes := func(t *testing.T) [][]byte {
		out := [][]byte{testvectors.Read(t, "kv_hints_envelope.msgpack"), jsonToMsgpack(t, testvectors.Read(t, "kv_hints_envelope.json"))}
		for _, b := range examples("kv_hints_envelope")(t) {
			out = append(out, jsonToMsgpack(t, b))
		}
		return out
	}
	decodeEnv := func(data []byte) error { _, err := receiver.Decode(data); return err }
	for _, c := range []schemaCase{
		{"request", []string{"FuzzDecodeRequest", "FuzzFastRequestJSON", "FuzzFastRequestMsgpack"}, withMsgpack(examples("request")),
			func(d []byte) error { _, err := schemas.DecodeRequest(d, ""); return err }},
		{"response", []string{"FuzzDecodeResponse"}, withMsgpack(examples("response")),
			func(d []byte) error { _, err := schemas.DecodeResponse(d, ""); return err }},
		{"load", []string{"FuzzDecodeLoad"}, withMsgpack(examples("load")),
			func(d []byte) error { _, err := schemas.Limits{}.DecodeLoad(d, ""); return err }},
		{"worker", []string{"FuzzDecodeWorkerRecord"}, examples("worker"),
			func(d []byte) error { _, err := schemas.Limits{}.DecodeWorkerRecord(d); return err }},
		{"kv_hints_envelope", []string{"FuzzEnvelopeUnmarshal", "../../emit/receiver/testdata/fuzz/FuzzDecode"}, envelopes, decodeEnv},
	} {
		t.Run(c.schema, func(t *testing.T) {
			var inputs [][]byte
			for _, dir := range c.corpora {
				if !strings.Contains(dir, "/") {
					dir = filepath.Join("testdata/fuzz", dir)
				} else if _, err := os.Stat(dir); err != nil {
					continue // an optional corpus
				}
				inputs = append(inputs, readCorpus(t, dir)...)
			}
			extra := c.extra(t)
			inputs = append(inputs, extra...)
			for _, b := range extra {
				inputs = append(inputs, mutations(t, b)...)
			}
			agree, accepted, jsonNulls := 0, 0, 0
			for _, data := range inputs {
				decErr := c.decode(data)
				var schErr error
				v, err := toJSONValue(data)
				if err != nil {
					schErr = err
				} else {
					schErr = sch[c.schema].Validate(v)
				}
				if decErr == nil && schErr != nil && err == nil && sch[c.schema].Validate(withoutNulls(v)) == nil {
					// encoding/json reads null as absent; the schemas,
					// like the msgpack decoder, do not (docs/wire.md).
					jsonNulls++
					continue
				}
				if (decErr == nil) != (schErr == nil) {
					t.Errorf("decoder %v, schema %v, for %q", decErr, schErr, trunc(data))
					continue
				}
				agree++
				if decErr == nil {
					accepted++
				}
			}
			if accepted == 0 || accepted == agree {
				t.Fatalf("%d inputs agree, %d accepted: the corpus must hold both kinds", agree, accepted)
			}
			t.Logf("%d inputs, %d agree (%d accepted by both), %d differ only by a JSON null", len(inputs), agree, accepted, jsonNulls)
		})
	}
}

// examples are the messages docs/wire.md shows, kept as files so they are
// checked here: jsonschema/examples/<name>*.json.
func examples(name string) func(t *testing.T) [][]byte {
	return func(t *testing.T) [][]byte {
		files, _ := filepath.Glob("jsonschema/examples/" + name + "*.json")
		var out [][]byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
}

// mutations derives variants of an accepted message, one field changed
// at a time (top level and one level down): removed, null, or replaced by
// a value of another type or out of range. A msgpack message's variants
// stay msgpack.
func mutations(t *testing.T, msg []byte) [][]byte {
	t.Helper()
	isMsgpack := len(msg) > 0 && msg[0] != '{'
	doc := msg
	if isMsgpack {
		var buf bytes.Buffer
		if _, err := msgp.UnmarshalAsJSON(&buf, msg); err != nil {
			t.Fatal(err)
		}
		doc = buf.Bytes()
	}
	encode := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if isMsgpack {
			return jsonToMsgpack(t, b)
		}
		return b
	}
	repl := []any{nil, "x", "", json.Number("-1"), json.Number("0"), json.Number("1.5"), json.Number("4294967296"),
		json.Number("18446744073709551616"), json.Number("253402300800000"), true, []any{}, []any{json.Number("-1")},
		[]any{"x"}, map[string]any{}, map[string]any{"a": json.Number("1")}}
	var out [][]byte
	var walk func(parent map[string]any, root any, depth int)
	walk = func(m map[string]any, root any, depth int) {
		for k, old := range m {
			delete(m, k)
			out = append(out, encode(root))
			for _, r := range repl {
				m[k] = r
				out = append(out, encode(root))
			}
			m[k] = old
			if sub, ok := old.(map[string]any); ok && depth < 2 {
				walk(sub, root, depth+1)
			}
			if arr, ok := old.([]any); ok && depth < 2 && len(arr) > 0 {
				if sub, ok := arr[0].(map[string]any); ok {
					walk(sub, root, depth+1)
				}
			}
		}
	}
	root, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := root.(map[string]any); ok {
		walk(m, root, 0)
	}
	return out
}

// withoutNulls drops the object members whose value is null.
func withoutNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e != nil {
				out[k] = withoutNulls(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = withoutNulls(e)
		}
		return out
	}
	return v
}

// withMsgpack adds the msgpack encoding of every example.
func withMsgpack(ex func(t *testing.T) [][]byte) func(t *testing.T) [][]byte {
	return func(t *testing.T) [][]byte {
		out := ex(t)
		for _, b := range ex(t) {
			out = append(out, jsonToMsgpack(t, b))
		}
		return out
	}
}

// jsonToMsgpack encodes a JSON document as the msgpack the sender would
// send: integers as integers, strings as str.
func jsonToMsgpack(t *testing.T, b []byte) []byte {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var conv func(any) any
	conv = func(v any) any {
		switch x := v.(type) {
		case json.Number:
			if n, err := x.Int64(); err == nil {
				return n
			}
			if u, err := strconv.ParseUint(string(x), 10, 64); err == nil {
				return u
			}
			f, _ := x.Float64()
			return f
		case []any:
			for i := range x {
				x[i] = conv(x[i])
			}
		case map[string]any:
			for k := range x {
				x[k] = conv(x[k])
			}
		}
		return v
	}
	out, err := msgp.AppendIntf(nil, conv(v))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func trunc(b []byte) string {
	if len(b) > 200 {
		return fmt.Sprintf("%s…(%d bytes)", b[:200], len(b))
	}
	return string(b)
}
