package lmcachepin_test

// A stand-in for LMCache's controller, written from its source: the
// FastAPI app of lmcache/v1/api_server/__main__.py at
// 958d8ce4cd478b639e83f770735577487e221839 (PinRequest: instance_id:
// str, location: str, tokens: list[int]; PinResponse: event_id: str,
// num_tokens: int), the executor's pin (lmcache/v1/cache_controller/
// executor.py at 594faea5d63132523327b704d0223dd8d46f1364: an instance
// without registered workers fails, which the route turns into a 500
// with the error as detail), and LMCache's PinMonitor
// (lmcache/v1/pin_monitor.py at 22cf7c874a5d3f3d7f057a7cb923800682780827:
// a pin lasts pin_timeout_sec from its last /pin, then is forced off).
//
// It refuses what FastAPI and pydantic refuse, with their status codes:
// a body that is not a JSON object, a missing field, a field of the wrong
// type (422). It is stricter in one way: pydantic's lax mode would take
// "7" or 7.0 as the int 7; the stand-in takes JSON integers only, so a
// test passing here proves hintstream sends exact types. Unknown fields
// are ignored, as pydantic's default (extra="ignore") ignores them, and
// recorded so a test can assert hintstream sends none.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type pinCall struct {
	Instance, Location string
	Tokens             []uint32
	Unknown            []string // fields pydantic would ignore
	At                 time.Time
}

type controller struct {
	*httptest.Server
	timeout time.Duration // LMCache's pin_timeout_sec

	mu        sync.Mutex
	instances map[string]bool
	calls     []pinCall
	lastPin   map[string]time.Time // instance + tokens -> last /pin
	refused   int
	// answer, when set, replaces the controller's answer (a hostile
	// peer); it returns false to answer normally.
	answer func(w http.ResponseWriter, r *http.Request) bool
}

func newController(t *testing.T, pinTimeout time.Duration, instances ...string) *controller {
	t.Helper()
	c := &controller{timeout: pinTimeout, instances: map[string]bool{}, lastPin: map[string]time.Time{}}
	for _, i := range instances {
		c.instances[i] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pin", c.pin)
	c.Server = httptest.NewServer(mux)
	t.Cleanup(c.Close)
	return c
}

func detail422(w http.ResponseWriter, typ, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{"type": typ, "loc": []string{"body", field}, "msg": msg}}})
}

func (c *controller) pin(w http.ResponseWriter, r *http.Request) {
	// The body is read first, as FastAPI does: the server then notices a
	// client that hangs up, and a hanging answer ends with it.
	raw, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	answer := c.answer
	c.mu.Unlock()
	if answer != nil && answer(w, r) {
		return
	}
	var body map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil || body == nil {
		c.refuse()
		detail422(w, "model_attributes_type", "", "Input should be a valid dictionary or object to extract fields from")
		return
	}
	var call pinCall
	for _, f := range []string{"instance_id", "location", "tokens"} {
		if _, ok := body[f]; !ok {
			c.refuse()
			detail422(w, "missing", f, "Field required")
			return
		}
	}
	for k := range body {
		if k != "instance_id" && k != "location" && k != "tokens" {
			call.Unknown = append(call.Unknown, k)
		}
	}
	if json.Unmarshal(body["instance_id"], &call.Instance) != nil {
		c.refuse()
		detail422(w, "string_type", "instance_id", "Input should be a valid string")
		return
	}
	if json.Unmarshal(body["location"], &call.Location) != nil {
		c.refuse()
		detail422(w, "string_type", "location", "Input should be a valid string")
		return
	}
	var elems []json.RawMessage
	if json.Unmarshal(body["tokens"], &elems) != nil || elems == nil {
		c.refuse()
		detail422(w, "list_type", "tokens", "Input should be a valid list")
		return
	}
	for i, e := range elems {
		var n uint32
		if !isJSONInt(e) || json.Unmarshal(e, &n) != nil {
			c.refuse()
			detail422(w, "int_type", fmt.Sprintf("tokens.%d", i), "Input should be a valid integer")
			return
		}
		call.Tokens = append(call.Tokens, n)
	}
	c.mu.Lock()
	known := c.instances[call.Instance]
	if known {
		call.At = time.Now()
		c.calls = append(c.calls, call)
		c.lastPin[pinKey(call.Instance, call.Tokens)] = call.At
	}
	c.mu.Unlock()
	if !known {
		// The executor's assertion on an unknown instance's workers,
		// turned into a 500 by the route.
		http.Error(w, `{"detail":"`+"instance "+call.Instance+` has no registered workers"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"event_id": "Pin" + fmt.Sprint(len(c.calls)), "num_tokens": len(call.Tokens)})
}

// isJSONInt: a JSON number without fraction or exponent.
func isJSONInt(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return false
	}
	return !bytes.ContainsAny(b, ".eE")
}

func (c *controller) refuse() {
	c.mu.Lock()
	c.refused++
	c.mu.Unlock()
}

func pinKey(instance string, tokens []uint32) string {
	var sb strings.Builder
	sb.WriteString(instance)
	for _, t := range tokens {
		fmt.Fprintf(&sb, ",%d", t)
	}
	return sb.String()
}

// pinned reports whether LMCache would still hold tokens pinned in
// instance now: pinned within the last pin_timeout_sec.
func (c *controller) pinned(instance string, tokens []uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.lastPin[pinKey(instance, tokens)]
	return ok && time.Since(at) < c.timeout
}

func (c *controller) pinCalls() []pinCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]pinCall(nil), c.calls...)
}

func (c *controller) setAnswer(f func(w http.ResponseWriter, r *http.Request) bool) {
	c.mu.Lock()
	c.answer = f
	c.mu.Unlock()
}

// The stand-in refuses what the controller refuses, so a test passing
// against it means something.
func TestControllerStandInRefuses(t *testing.T) {
	c := newController(t, time.Minute, "inst")
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1,2]}`, 200},
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1,2],"ttl":5}`, 200}, // unknown field: ignored
		{`{"location":"LocalCPUBackend","tokens":[1]}`, 422},                                // missing instance_id
		{`{"instance_id":"inst","tokens":[1]}`, 422},                                        // missing location
		{`{"instance_id":7,"location":"LocalCPUBackend","tokens":[1]}`, 422},                // wrong type
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":"1,2"}`, 422},         // not a list
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[true]}`, 422},        // not ints
		{`{"instance_id":"inst","location":"LocalCPUBackend","tokens":[1.5]}`, 422},
		{`[1,2]`, 422},
		{`{"instance_id":"other","location":"LocalCPUBackend","tokens":[1]}`, 500}, // unknown instance
	} {
		resp, err := http.Post(c.URL+"/pin", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.body, resp.StatusCode, tc.want)
		}
	}
	if calls := c.pinCalls(); len(calls) != 2 || len(calls[1].Unknown) != 1 || !c.pinned("inst", []uint32{1, 2}) {
		t.Fatalf("calls %+v", calls)
	}
}
