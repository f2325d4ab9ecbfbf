package schemas

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// tenMillion is the token count of the hostile messages below; as u32
// token ids it would take 40 MB.
const tenMillion = 10_000_000

// A 10,000,000-token array, claimed by a msgpack header or really there
// in JSON, is rejected by the limits before anything is allocated for
// it, with a reason naming the problem.
func TestTenMillionTokensRejectedWithoutAllocating(t *testing.T) {
	// 1 MiB against the 40 MB the tokens would take; JSON may reserve
	// MaxTokens ids first (the fast path of request_json.go sizes its
	// slice once), which the limit, not the input, bounds.
	const budget = 1 << 20
	jsonBudget := uint64(budget + 4*DefaultLimits().MaxTokens)
	claim := msgp.AppendArrayHeader(nil, tenMillion)
	claim = append(claim, 1, 2, 3)
	mpReq := mapMsg("request_id", "a", "token_ids", raw(claim...))
	mpResp := mapMsg("request_id", "a", "output_token_ids", raw(claim...))
	var js bytes.Buffer
	js.WriteString(`{"request_id":"a","token_ids":[`)
	js.WriteString(strings.Repeat("1,", tenMillion-1))
	js.WriteString(`1]}`)
	jsResp := bytes.Replace(js.Bytes(), []byte("token_ids"), []byte("output_token_ids"), 1)
	wide := Limits{MaxBytes: 64 << 20} // so that the token limit, not the size limit, speaks
	cases := []struct {
		name   string
		decode func() error
		reason string
		budget uint64
	}{
		{"msgpack claim, request", func() error { _, err := Limits{}.DecodeRequest(mpReq, ""); return err }, "too many token_ids", budget},
		{"msgpack claim, response", func() error { _, err := Limits{}.DecodeResponse(mpResp, ""); return err }, "too many output_token_ids", budget},
		{"JSON, request, default limits", func() error { _, err := Limits{}.DecodeRequest(js.Bytes(), ""); return err }, "message too large", budget},
		{"JSON, request, MaxBytes 64 MiB", func() error { _, err := wide.DecodeRequest(js.Bytes(), ""); return err }, "too many token_ids", jsonBudget},
		{"JSON, response, MaxBytes 64 MiB", func() error { _, err := wide.DecodeResponse(jsResp, ""); return err }, "too many output_token_ids", budget},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := heapAllocated(func() { err = c.decode() })
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason != c.reason {
				t.Fatalf("error %v, want reason %q", err, c.reason)
			}
			if n > c.budget {
				t.Fatalf("allocated %d bytes rejecting it (budget %d)", n, c.budget)
			}
		})
	}
}

// 100,000 levels of nesting are refused at MaxDepth, in either encoding,
// without recursion or allocation in proportion.
func TestDeepNestingRejected(t *testing.T) {
	deepJSON := []byte(`{"request_id":"a","x":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`)
	deepMsgpack := mapMsg("request_id", "a", "x", raw(append(bytes.Repeat([]byte{0x91}, 100_000), 0xc0)...))
	for name, c := range map[string]struct {
		data   []byte
		reason string
	}{"JSON": {deepJSON, "JSON nested too deeply"}, "msgpack": {deepMsgpack, "msgpack nested too deeply"}} {
		var err error
		n := heapAllocated(func() { _, err = Limits{}.DecodeRequest(c.data, "") })
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != c.reason {
			t.Errorf("%s: error %v, want reason %q", name, err, c.reason)
		}
		if n > 64<<10 {
			t.Errorf("%s: allocated %d bytes", name, n)
		}
	}
	// At the limit it decodes.
	ok := []byte(`{"request_id":"a","x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + `}`)
	if _, err := (Limits{}).DecodeRequest(ok, ""); err != nil {
		t.Errorf("nesting 32 deep: %v", err)
	}
	okMp := mapMsg("request_id", "a", "x", raw(append(bytes.Repeat([]byte{0x91}, 31), 0xc0)...))
	if _, err := (Limits{}).DecodeRequest(okMp, ""); err != nil {
		t.Errorf("msgpack nesting 32 deep: %v", err)
	}
}

// Objects and arrays that encoding/json would grow element by element are
// bounded before it starts.
func TestJSONShapeLimits(t *testing.T) {
	hdrs := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"request_id":"a","headers":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"h` + strings.Repeat("x", i%7) + `":"v"`)
		}
		b.WriteString(`}}`)
		return b.String()
	}
	for _, c := range []struct {
		data, reason string
	}{
		{hdrs(257), "too many headers"},
		{`{"request_id":"a","x":{` + strings.Repeat(`"k":1,`, MaxMapEntries) + `"k":1}}`, "JSON object too large"},
		{`{"request_id":"a","x":[` + strings.Repeat(`1,`, 1<<20) + `1]}`, "JSON array too large"},
		{`{"request_id":"a","tool_calls":[` + strings.Repeat(`{},`, 1<<20) + `{}]}`, "too many tool_calls"},
	} {
		_, err := Limits{}.DecodeRequest([]byte(c.data), "")
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != c.reason {
			t.Errorf("%.60s...: error %v, want reason %q", c.data, err, c.reason)
		}
	}
	if _, err := (Limits{}).DecodeRequest([]byte(hdrs(256)), ""); err != nil {
		t.Errorf("256 headers: %v", err)
	}
	// 500,000 distinct headers (6 MB) are refused without building the
	// map: 90 MB before the fast path's bound.
	var many strings.Builder
	many.WriteString(`{"request_id":"a","headers":{`)
	for i := range 500_000 {
		if i > 0 {
			many.WriteByte(',')
		}
		many.WriteString(`"` + strconv.Itoa(i) + `":""`)
	}
	many.WriteString(`}}`)
	var err error
	manyData := []byte(many.String())
	if n := heapAllocated(func() { _, err = Limits{}.DecodeRequest(manyData, "") }); n > 1<<20 {
		t.Errorf("500,000 headers: allocated %d bytes", n)
	}
	if de := (*DecodeError)(nil); !errors.As(err, &de) || de.Reason != "too many headers" {
		t.Errorf("500,000 headers: %v", err)
	}
	// Braces and commas inside strings are not structure.
	if _, err := (Limits{MaxTokens: 2}).DecodeRequest([]byte(`{"request_id":"a,b,c,[[[{{{","token_ids":[1,2]}`), ""); err != nil {
		t.Errorf("punctuation in strings: %v", err)
	}
}

func TestCheckHeaders(t *testing.T) {
	many := map[string][]string{}
	for i := range 257 {
		many[strings.Repeat("k", i+1)] = []string{"v"}
	}
	for _, c := range []struct {
		h      map[string][]string
		reason string
	}{
		{map[string][]string{"Content-Type": {"application/json"}}, ""},
		{many, "too many NATS headers"},
		{map[string][]string{"X": {strings.Repeat("v", 16<<10)}}, "NATS headers too large"},
		{map[string][]string{"X": make([]string, 257)}, "too many NATS headers"},
	} {
		err := Limits{}.CheckHeaders("request", c.h)
		var de *DecodeError
		switch {
		case c.reason == "" && err != nil:
			t.Errorf("%d headers: %v", len(c.h), err)
		case c.reason != "" && (!errors.As(err, &de) || de.Reason != c.reason || de.Kind != "request"):
			t.Errorf("%d headers: %v, want %q", len(c.h), err, c.reason)
		}
	}
}

func TestTimestampsInRange(t *testing.T) {
	for _, c := range []struct {
		data   string
		reason string
	}{
		{`{"request_id":"a","received_at_ms":-1}`, "received_at_ms out of range"},
		{`{"request_id":"a","received_at_ms":9223372036854775807}`, "received_at_ms out of range"},
		{`{"request_id":"a","received_at_ms":253402300800000}`, "received_at_ms out of range"},
		{`{"request_id":"a","received_at_ms":253402300799999}`, ""},
		{`{"request_id":"a","received_at_ms":1700000000000}`, ""},
	} {
		_, err := Limits{}.DecodeRequest([]byte(c.data), "")
		var de *DecodeError
		if (c.reason == "" && err != nil) || (c.reason != "" && (!errors.As(err, &de) || de.Reason != c.reason)) {
			t.Errorf("%s: %v, want %q", c.data, err, c.reason)
		}
	}
	_, err := Limits{}.DecodeResponse([]byte(`{"request_id":"a","completed_at_ms":-5}`), "")
	if de := (*DecodeError)(nil); !errors.As(err, &de) || de.Reason != "completed_at_ms out of range" {
		t.Errorf("negative completed_at_ms: %v", err)
	}
}
