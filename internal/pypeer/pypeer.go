// Package pypeer runs an independent Python receiver of KvHintsEnvelope
// messages for tests: it binds PULL sockets and decodes what arrives as an
// SGLang scheduler or the Mooncake master would with msgspec (strings must
// be msgpack str, required fields present, integers in range), so a test
// can prove that the Go encoder's bytes are accepted by the other side.
//
// It needs /usr/bin/python3 with the msgpack and zmq modules (`make deps`).
package pypeer

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

//go:embed kvhints_sink.py
var sinkScript []byte

// Python is the interpreter the sink runs with: the system one, which has
// Debian's python3-msgpack and python3-zmq (a pyenv python3 on PATH has not).
func Python() string { return "/usr/bin/python3" }

// Received is one message the sink got.
type Received struct {
	Endpoint string
	OK       bool   // decoded and validated like msgspec would
	Error    string // why not, in msgspec's words
	// Envelope is the decoded envelope when OK. Numbers are json.Number so
	// that 64-bit hashes and ids keep every digit; bytes in unknown fields
	// appear as {"$bytes": hex}.
	Envelope map[string]any
	At       time.Time // when the Go side read the line
}

// Sink is a running kvhints_sink.py.
type Sink struct {
	endpoints []string
	stderr    *syncBuffer
	exited    chan struct{} // closed when stdout hits EOF

	mu   sync.Mutex
	msgs []Received
	bad  []string // stdout lines that were not JSON
}

// StartSink runs the sink with n PULL sockets bound on ephemeral loopback
// ports and waits (10s at most) until they are bound. It fails the test,
// with the script's stderr, when the interpreter or its modules are
// missing or the script does not come up. The process is stopped at test
// cleanup.
func StartSink(t testing.TB, n int) *Sink {
	t.Helper()
	if n < 1 {
		t.Fatalf("pypeer: StartSink needs at least one endpoint, got %d", n)
	}
	if out, err := exec.Command(Python(), "-c", "import msgpack, zmq").CombinedOutput(); err != nil {
		t.Fatalf("pypeer: %s cannot import msgpack and zmq (%v: %s); run `make deps`",
			Python(), err, bytes.TrimSpace(out))
	}
	script := filepath.Join(t.TempDir(), "kvhints_sink.py")
	if err := os.WriteFile(script, sinkScript, 0o644); err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	args := []string{script}
	for range n {
		args = append(args, "--bind", "tcp://127.0.0.1:*")
	}
	cmd := exec.Command(Python(), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	s := &Sink{stderr: new(syncBuffer), exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("pypeer: start %s: %v", Python(), err)
	}
	ready := make(chan []string, 1)
	go s.read(stdout, ready)
	t.Cleanup(func() {
		// Closing stdin asks the script to exit; kill it if it does not.
		stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-s.exited
		}
		cmd.Wait()
	})

	select {
	case eps := <-ready:
		if len(eps) != n {
			t.Fatalf("pypeer: sink reported %d endpoints, want %d; stderr:\n%s", len(eps), n, s.stderr)
		}
		s.endpoints = eps
	case <-s.exited:
		t.Fatalf("pypeer: sink exited before it was ready; stderr:\n%s", s.stderr)
	case <-time.After(10 * time.Second):
		t.Fatalf("pypeer: sink not ready within 10s; stderr:\n%s", s.stderr)
	}
	return s
}

func (s *Sink) read(r io.Reader, ready chan<- []string) {
	defer close(s.exited)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20) // envelopes with long prompts
	first := true
	for sc.Scan() {
		if first {
			first = false
			var hello struct {
				Ready     bool     `json:"ready"`
				Endpoints []string `json:"endpoints"`
			}
			if err := json.Unmarshal(sc.Bytes(), &hello); err == nil && hello.Ready {
				ready <- hello.Endpoints
				continue
			}
		}
		var line struct {
			Endpoint string         `json:"endpoint"`
			OK       bool           `json:"ok"`
			Error    string         `json:"error"`
			Envelope map[string]any `json:"envelope"`
		}
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber()
		err := dec.Decode(&line)
		s.mu.Lock()
		if err != nil {
			s.bad = append(s.bad, sc.Text())
		} else {
			s.msgs = append(s.msgs, Received{
				Endpoint: line.Endpoint, OK: line.OK, Error: line.Error,
				Envelope: line.Envelope, At: time.Now(),
			})
		}
		s.mu.Unlock()
	}
	// Drain so the script never blocks on a full pipe after a scan error.
	io.Copy(io.Discard, r)
}

// Endpoints returns the bound endpoints, e.g. "tcp://127.0.0.1:41234", in
// the order of the binds.
func (s *Sink) Endpoints() []string { return append([]string(nil), s.endpoints...) }

// Messages returns every message received so far, in arrival order.
func (s *Sink) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// WaitFor polls until cond holds for the messages received so far, and
// fails the test with msg, the messages and the script's stderr if it does
// not within the given time or the script dies.
func (s *Sink) WaitFor(t testing.TB, within time.Duration, cond func([]Received) bool, msg string) {
	t.Helper()
	deadline := time.After(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond(s.Messages()) {
			return
		}
		select {
		case <-tick.C:
		case <-s.exited:
			if cond(s.Messages()) {
				return
			}
			t.Fatalf("pypeer: sink exited while waiting: %s\n%s", msg, s.report())
		case <-deadline:
			t.Fatalf("pypeer: not within %v: %s\n%s", within, msg, s.report())
		}
	}
}

func (s *Sink) report() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages:\n", len(s.msgs))
	for i, m := range s.msgs {
		if i == 20 {
			fmt.Fprintf(&b, "  ...\n")
			break
		}
		fmt.Fprintf(&b, "  %s ok=%v %s\n", m.Endpoint, m.OK, m.Error)
	}
	for _, l := range s.bad {
		fmt.Fprintf(&b, "unparsed line: %q\n", l)
	}
	fmt.Fprintf(&b, "stderr:\n%s", s.stderr)
	return b.String()
}

// syncBuffer is the script's stderr, read while the process still writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
