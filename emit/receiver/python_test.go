package receiver

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	zmq "github.com/pebbe/zmq4"
)

// pyReceiver runs contrib/python/hintstream_receiver.py, the receiver an
// SGLang scheduler integrator copies, and reads its JSON lines.
type pyReceiver struct {
	cmd   *exec.Cmd
	lines chan map[string]any
	stdin interface{ Close() error }
	ep    string
}

func startPyReceiver(t *testing.T, extra ...string) *pyReceiver {
	t.Helper()
	cmd := exec.Command("/usr/bin/python3", append([]string{"../../contrib/python/hintstream_receiver.py",
		"--bind", "tcp://127.0.0.1:*"}, extra...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start /usr/bin/python3 (make deps installs it with python3-zmq and python3-msgpack): %v", err)
	}
	p := &pyReceiver{cmd: cmd, lines: make(chan map[string]any, 64), stdin: stdin}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				p.lines <- m
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := p.next(t)
	if ready["ready"] != true {
		t.Fatalf("first line %v", ready)
	}
	p.ep = ready["endpoint"].(string)
	return p
}

func (p *pyReceiver) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m, ok := <-p.lines:
		if !ok {
			t.Fatal("hintstream_receiver.py exited")
		}
		return m
	case <-time.After(15 * time.Second):
		t.Fatal("no line from hintstream_receiver.py within 15s")
	}
	return nil
}

// TestPythonReceiverAgainstTheRealSender: hintstream's sender
// (zmqsend.Pool) to the Python reference receiver: a prefetch and a pin
// and its release arrive once each with their payloads; a repeat and a
// stale prefetch are dropped and counted; every envelope the Go decoder
// rejects (TestDecodeIsStrict's cases) the Python one rejects too.
func TestPythonReceiverAgainstTheRealSender(t *testing.T) {
	py := startPyReceiver(t)
	pool := sendPool(t)
	fresh := prefetchHint(t, "py-1", time.Now().Add(10*time.Second))
	stale := prefetchHint(t, "py-stale", time.Now().Add(-time.Second))
	stale.Deadline = time.Now().Add(10 * time.Second) // the sender still sends it
	pin := pinHint(t, actions.Pin{Trigger: "py-2", Slot: "sess-2", Keys: []string{"k_1", "k_2"},
		TTL: 30 * time.Second, Priority: 40, Tokens: 2048})
	release := pinHint(t, actions.Pin{Trigger: "py-2", Slot: "sess-2"})
	for _, h := range []actions.Hint{fresh, fresh, stale, pin, release} {
		if err := pool.Send(py.ep, h); err != nil {
			t.Fatal(err)
		}
	}
	got := []map[string]any{py.next(t), py.next(t), py.next(t)}
	pl := got[0]["payload"].(map[string]any)
	if got[0]["action_type"] != "kv.prefetch" || pl["request_id"] != "py-1" || len(pl["token_ids"].([]any)) != 3 ||
		got[0]["message_id"] != fresh.MessageID {
		t.Fatalf("prefetch line %v", got[0])
	}
	pl = got[1]["payload"].(map[string]any)
	if got[1]["action_type"] != "kv.pin" || pl["slot"] != "sess-2" || pl["ttl_ms"] != 30000.0 || pl["priority"] != 40.0 ||
		pl["tokens"] != 2048.0 || len(pl["keys"].([]any)) != 2 {
		t.Fatalf("pin line %v", got[1])
	}
	if pl = got[2]["payload"].(map[string]any); got[2]["action_type"] != "kv.pin" || pl["ttl_ms"] != 0.0 {
		t.Fatalf("release line %v", got[2])
	}

	// The strictness cases, by a plain PUSH (no sender would make them).
	push, err := zmq.NewSocket(zmq.PUSH)
	if err != nil {
		t.Fatal(err)
	}
	defer push.Close()
	_ = push.SetLinger(time.Second)
	if err := push.Connect(py.ep); err != nil {
		t.Fatal(err)
	}
	bad := strictCases()
	for _, b := range bad {
		if _, err := Decode(b); err == nil {
			t.Fatal("a strictness case the Go decoder accepts")
		}
		if _, err := push.SendBytes(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	// A last good pin on the same connection marks the end of the bad ones.
	end := pinHint(t, actions.Pin{Trigger: "py-end", Slot: "end", Keys: []string{"k"}, TTL: time.Second, Priority: 1})
	if _, err := push.SendBytes(end.Body, 0); err != nil {
		t.Fatal(err)
	}
	if m := py.next(t); m["payload"].(map[string]any)["slot"] != "end" {
		t.Fatalf("a bad envelope got through: %v", m)
	}
	_ = py.stdin.Close()
	c := py.next(t)["counters"].(map[string]any)
	want := map[string]float64{"duplicate": 1, "expired": 1, "invalid": float64(len(bad)),
		"delivered|kv.prefetch": 1, "delivered|kv.pin": 3}
	for k, v := range want {
		if c[k] != v {
			t.Errorf("python counter %s = %v, want %v (all %v)", k, c[k], v, c)
		}
	}
}

// TestPythonReceiverCurve: the Python receiver as a CURVE server, the
// real sender as its client.
func TestPythonReceiverCurve(t *testing.T) {
	if !zmq.HasCurve() {
		t.Skip("libzmq without CURVE")
	}
	pub, sec, err := zmq.NewCurveKeypair()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(keyFile, []byte(sec+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	py := startPyReceiver(t, "--curve-secret-key-file", keyFile)
	pool := sendPool(t, zmqsend.WithCurve(func(string) (string, bool) { return pub, true }))
	if err := pool.Send(py.ep, prefetchHint(t, "py-curve", time.Now().Add(10*time.Second))); err != nil {
		t.Fatal(err)
	}
	if m := py.next(t); m["payload"].(map[string]any)["request_id"] != "py-curve" {
		t.Fatalf("line %v", m)
	}
}
