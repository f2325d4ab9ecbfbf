package standin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// LMCachePin is one /pin the stand-in accepted.
type LMCachePin struct {
	Instance, Location string
	Tokens             []uint32
	Unknown            []string // fields pydantic would ignore
	At                 time.Time
}

// LMCacheController is a stand-in for LMCache's controller, written from
// its source: the FastAPI app of lmcache/v1/api_server/__main__.py at
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
type LMCacheController struct {
	*httptest.Server
	timeout time.Duration // LMCache's pin_timeout_sec

	mu        sync.Mutex
	instances map[string]bool
	calls     []LMCachePin
	lastPin   map[string]time.Time // instance + tokens -> last /pin
	refused   int
	// answer, when set, replaces the controller's answer (a hostile
	// peer); it returns false to answer normally.
	answer func(w http.ResponseWriter, r *http.Request) bool
}

// NewLMCacheController serves the stand-in on 127.0.0.1 for the given
// registered instances, with LMCache's pin_timeout_sec as pinTimeout;
// the caller closes it.
func NewLMCacheController(pinTimeout time.Duration, instances ...string) *LMCacheController {
	c := &LMCacheController{timeout: pinTimeout, instances: map[string]bool{}, lastPin: map[string]time.Time{}}
	for _, i := range instances {
		c.instances[i] = true
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /pin", c.pin)
	c.Server = httptest.NewServer(mux)
	return c
}

func detail422(w http.ResponseWriter, typ, field, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnprocessableEntity)
	_ = json.NewEncoder(w).Encode(map[string]any{"detail": []map[string]any{{"type": typ, "loc": []string{"body", field}, "msg": msg}}})
}

func (c *LMCacheController) pin(w http.ResponseWriter, r *http.Request) {
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
	var call LMCachePin
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
	_ = json.NewEncoder(w).Encode(map[string]any{"event_id": "Pin" + call.At.Format(time.RFC3339Nano), "num_tokens": len(call.Tokens)})
}

// isJSONInt: a JSON number without fraction or exponent.
func isJSONInt(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || (b[0] != '-' && (b[0] < '0' || b[0] > '9')) {
		return false
	}
	return !bytes.ContainsAny(b, ".eE")
}

func (c *LMCacheController) refuse() {
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

// Pinned reports whether LMCache would still hold tokens pinned in
// instance now: pinned within the last pin_timeout_sec.
func (c *LMCacheController) Pinned(instance string, tokens []uint32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.lastPin[pinKey(instance, tokens)]
	return ok && time.Since(at) < c.timeout
}

// Pins are the /pin calls accepted, in order.
func (c *LMCacheController) Pins() []LMCachePin {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]LMCachePin(nil), c.calls...)
}

// Refused counts the bodies refused with a 422.
func (c *LMCacheController) Refused() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refused
}

// SetAnswer makes f answer /pin first (a hostile controller); f returns
// false to let the stand-in answer.
func (c *LMCacheController) SetAnswer(f func(w http.ResponseWriter, r *http.Request) bool) {
	c.mu.Lock()
	c.answer = f
	c.mu.Unlock()
}
