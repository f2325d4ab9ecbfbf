package pypeer

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

//go:embed harnesspub.py
var harnessPubScript []byte

// HarnessPub is a running harnesspub.py: an agent harness's tool-event
// PUB socket on loopback, driven command by command from the test.
type HarnessPub struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  *os.File
	lines  chan []byte
	stderr *syncBuffer
	pub    string
}

// StartHarnessPub runs the publisher bound at port (0: any) with topic,
// and waits until it is bound. Stop ends it early (a harness crash);
// otherwise it is stopped at test cleanup.
func StartHarnessPub(t testing.TB, port int, topic string) *HarnessPub {
	t.Helper()
	script := filepath.Join(t.TempDir(), "harnesspub.py")
	if err := os.WriteFile(script, harnessPubScript, 0o644); err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	cmd := exec.Command(Python(), script, "--port", strconv.Itoa(port), "--topic", topic)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h := &HarnessPub{t: t, cmd: cmd, stdin: w, lines: make(chan []byte, 16), stderr: new(syncBuffer)}
	cmd.Stderr = h.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("pypeer: start %s: %v", Python(), err)
	}
	r.Close()
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			h.lines <- bytes.Clone(sc.Bytes())
		}
		close(h.lines)
	}()
	t.Cleanup(h.Stop)
	var hello struct {
		Ready bool   `json:"ready"`
		Pub   string `json:"pub"`
	}
	if err := json.Unmarshal(h.next(), &hello); err != nil || !hello.Ready {
		t.Fatalf("pypeer: harnesspub's first line is not its ready line (%v); stderr:\n%s", err, h.stderr)
	}
	h.pub = hello.Pub
	return h
}

// Endpoint is the bound PUB endpoint.
func (h *HarnessPub) Endpoint() string { return h.pub }

func (h *HarnessPub) next() []byte {
	h.t.Helper()
	select {
	case l, ok := <-h.lines:
		if ok {
			return l
		}
		h.t.Fatalf("pypeer: harnesspub exited; stderr:\n%s", h.stderr)
	case <-time.After(10 * time.Second):
		h.t.Fatalf("pypeer: harnesspub did not answer within 10s; stderr:\n%s", h.stderr)
	}
	return nil
}

func (h *HarnessPub) do(cmd map[string]any) map[string]any {
	h.t.Helper()
	b, _ := json.Marshal(cmd)
	if _, err := h.stdin.Write(append(b, '\n')); err != nil {
		h.t.Fatalf("pypeer: harnesspub: %v", err)
	}
	var reply map[string]any
	if err := json.Unmarshal(h.next(), &reply); err != nil || reply["ok"] != true {
		h.t.Fatalf("pypeer: harnesspub refused %s: %v %v", b, reply, err)
	}
	return reply
}

// Send packs and sends one record; seq < 0 takes the harness's next. It
// returns the seq sent.
func (h *HarnessPub) Send(record map[string]any, seq int64) uint64 {
	h.t.Helper()
	cmd := map[string]any{"event": record}
	if seq >= 0 {
		cmd["seq"] = seq
	}
	return uint64(h.do(cmd)["seq"].(float64))
}

// Raw sends frames as they are.
func (h *HarnessPub) Raw(frames ...[]byte) {
	h.t.Helper()
	hx := make([]string, len(frames))
	for i, f := range frames {
		hx[i] = hex.EncodeToString(f)
	}
	h.do(map[string]any{"raw": hx})
}

// Stop ends the publisher (closing its stdin) and waits for it.
func (h *HarnessPub) Stop() {
	if h.stdin == nil {
		return
	}
	h.stdin.Close()
	h.stdin = nil
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}
