package pypeer

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

//go:embed enginepub.py
var enginePubScript []byte

// EnginePubOptions configures StartEnginePubWith. The zero value is vLLM's
// defaults: empty topic, dp rank 0, a replay buffer of 10000 batches.
type EnginePubOptions struct {
	Topic       string
	DpRank      int
	BufferSteps int // 0 = 10000
}

// Batch is one EventBatch the engine made: its sequence number and the
// exact msgpack bytes it sent (or only buffered, for Skip).
type Batch struct {
	Seq     uint64
	Payload []byte
}

// EnginePub is a running enginepub.py: a vLLM-like KV-event publisher with
// a PUB socket and a ROUTER replay socket on loopback, driven command by
// command from the test.
type EnginePub struct {
	t       testing.TB
	pub     string
	replay  string
	stdin   io.WriteCloser
	lines   chan []byte // stdout lines after the ready line
	stderr  *syncBuffer
	exited  chan struct{}
	quit    chan struct{} // closed at cleanup: read stops handing out lines
	timeout time.Duration
}

// StartEnginePub runs the publisher with vLLM's defaults; see
// StartEnginePubWith.
func StartEnginePub(t testing.TB) *EnginePub {
	t.Helper()
	return StartEnginePubWith(t, EnginePubOptions{})
}

// StartEnginePubWith runs the publisher and waits (10s at most) until its
// sockets are bound. It fails the test, with the script's stderr, when the
// interpreter or its modules are missing or the script does not come up.
// The process is stopped at test cleanup.
func StartEnginePubWith(t testing.TB, o EnginePubOptions) *EnginePub {
	t.Helper()
	if out, err := exec.Command(Python(), "-c", "import msgpack, zmq").CombinedOutput(); err != nil {
		t.Fatalf("pypeer: %s cannot import msgpack and zmq (%v: %s); run `make deps`",
			Python(), err, bytes.TrimSpace(out))
	}
	script := filepath.Join(t.TempDir(), "enginepub.py")
	if err := os.WriteFile(script, enginePubScript, 0o644); err != nil {
		t.Fatalf("pypeer: %v", err)
	}
	args := []string{script, "--topic", o.Topic, "--dp-rank", strconv.Itoa(o.DpRank)}
	if o.BufferSteps > 0 {
		args = append(args, "--buffer-steps", strconv.Itoa(o.BufferSteps))
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
	e := &EnginePub{t: t, stdin: stdin, lines: make(chan []byte, 16), stderr: new(syncBuffer),
		exited: make(chan struct{}), quit: make(chan struct{}), timeout: 10 * time.Second}
	cmd.Stderr = e.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("pypeer: start %s: %v", Python(), err)
	}
	go e.read(stdout)
	t.Cleanup(func() {
		// Closing stdin asks the script to exit; kill it if it does not.
		close(e.quit)
		stdin.Close()
		select {
		case <-e.exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-e.exited
		}
		cmd.Wait()
	})

	var hello struct {
		Ready  bool   `json:"ready"`
		Pub    string `json:"pub"`
		Replay string `json:"replay"`
	}
	if err := json.Unmarshal(e.next("ready line"), &hello); err != nil || !hello.Ready {
		t.Fatalf("pypeer: enginepub's first line is not its ready line (%v); stderr:\n%s", err, e.stderr)
	}
	e.pub, e.replay = hello.Pub, hello.Replay
	return e
}

func (e *EnginePub) read(r io.Reader) {
	defer close(e.exited)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 256<<20) // a reply holds every payload in hex
	for sc.Scan() {
		select {
		case e.lines <- bytes.Clone(sc.Bytes()):
		case <-e.quit:
		}
	}
	io.Copy(io.Discard, r)
}

// next returns the next stdout line, failing the test if none comes.
func (e *EnginePub) next(what string) []byte {
	e.t.Helper()
	select {
	case l := <-e.lines:
		return l
	case <-e.exited:
		select {
		case l := <-e.lines:
			return l
		default:
		}
		e.t.Fatalf("pypeer: enginepub exited while waiting for its %s; stderr:\n%s", what, e.stderr)
	case <-time.After(e.timeout):
		e.t.Fatalf("pypeer: no %s from enginepub within %v; stderr:\n%s", what, e.timeout, e.stderr)
	}
	return nil
}

// Endpoints returns the bound PUB and ROUTER (replay) endpoints, e.g.
// "tcp://127.0.0.1:41234".
func (e *EnginePub) Endpoints() (pub, replay string) { return e.pub, e.replay }

// Publish makes n batches, sends them on PUB and keeps them for replay.
// It returns once the script has sent them (a SUB may still be receiving).
func (e *EnginePub) Publish(n int) []Batch {
	e.t.Helper()
	return e.batches(map[string]any{"publish": n})
}

// Skip makes k batches that are kept for replay but never sent on PUB: a
// subscriber sees a gap in the sequence.
func (e *EnginePub) Skip(k int) []Batch {
	e.t.Helper()
	return e.batches(map[string]any{"skip": k})
}

// Restart simulates a new engine incarnation on the same sockets: the next
// batch has seq 0 again, the replay buffer is emptied, and payloads differ
// from the earlier incarnation's.
func (e *EnginePub) Restart() {
	e.t.Helper()
	e.do(map[string]any{"restart": true}, nil)
}

// ReplayRequests returns how many well-formed replay requests the ROUTER
// has served.
func (e *EnginePub) ReplayRequests() int {
	e.t.Helper()
	var r struct {
		N int `json:"replay_requests"`
	}
	e.do(map[string]any{"stats": true}, &r)
	return r.N
}

func (e *EnginePub) batches(cmd map[string]any) []Batch {
	e.t.Helper()
	var r struct {
		Batches []struct {
			Seq     uint64 `json:"seq"`
			Payload string `json:"payload"`
		} `json:"batches"`
	}
	e.do(cmd, &r)
	out := make([]Batch, len(r.Batches))
	for i, b := range r.Batches {
		p, err := hex.DecodeString(b.Payload)
		if err != nil {
			e.t.Fatalf("pypeer: enginepub payload %d: %v", b.Seq, err)
		}
		out[i] = Batch{Seq: b.Seq, Payload: p}
	}
	return out
}

// do sends one command and decodes its reply into out (if not nil).
func (e *EnginePub) do(cmd map[string]any, out any) {
	e.t.Helper()
	b, err := json.Marshal(cmd)
	if err != nil {
		e.t.Fatalf("pypeer: %v", err)
	}
	if _, err := e.stdin.Write(append(b, '\n')); err != nil {
		e.t.Fatalf("pypeer: write command to enginepub: %v; stderr:\n%s", err, e.stderr)
	}
	reply := e.next(fmt.Sprintf("reply to %s", b))
	var status struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(reply, &status); err != nil || !status.OK {
		e.t.Fatalf("pypeer: enginepub command %s failed: %s %v; stderr:\n%s", b, status.Error, err, e.stderr)
	}
	if out != nil {
		if err := json.Unmarshal(reply, out); err != nil {
			e.t.Fatalf("pypeer: enginepub reply %q: %v", reply, err)
		}
	}
}
