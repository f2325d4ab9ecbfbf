package pypeer

import (
	_ "embed"
	"encoding/hex"
	"strconv"
	"testing"
)

//go:embed harnesspub.py
var harnessPubScript []byte

// HarnessPub is a running harnesspub.py: an agent harness's tool-event
// PUB socket on loopback, driven command by command from the test.
type HarnessPub struct {
	p   *scriptProc
	pub string
}

// StartHarnessPub runs the publisher bound at port (0: any) with topic,
// and waits until it is bound. Stop ends it early (a harness crash);
// otherwise it is stopped at test cleanup.
func StartHarnessPub(t testing.TB, port int, topic string) *HarnessPub {
	t.Helper()
	var hello struct {
		Ready bool   `json:"ready"`
		Pub   string `json:"pub"`
	}
	p := startScript(t, "harnesspub", harnessPubScript, &hello, "--port", strconv.Itoa(port), "--topic", topic)
	if !hello.Ready {
		t.Fatalf("pypeer: harnesspub's first line is not its ready line; stderr:\n%s", p.stderr)
	}
	return &HarnessPub{p: p, pub: hello.Pub}
}

// Endpoint is the bound PUB endpoint.
func (h *HarnessPub) Endpoint() string { return h.pub }

// Send packs and sends one record; seq < 0 takes the harness's next. It
// returns the seq sent.
func (h *HarnessPub) Send(record map[string]any, seq int64) uint64 {
	h.p.t.Helper()
	cmd := map[string]any{"event": record}
	if seq >= 0 {
		cmd["seq"] = seq
	}
	return uint64(h.p.do(cmd)["seq"].(float64))
}

// Raw sends frames as they are.
func (h *HarnessPub) Raw(frames ...[]byte) {
	h.p.t.Helper()
	hx := make([]string, len(frames))
	for i, f := range frames {
		hx[i] = hex.EncodeToString(f)
	}
	h.p.do(map[string]any{"raw": hx})
}

// Stop ends the publisher (closing its stdin) and waits for it.
func (h *HarnessPub) Stop() { h.p.stop() }
