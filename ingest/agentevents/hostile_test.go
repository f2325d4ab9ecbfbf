package agentevents

// Hostile input on the agent-event bridge (issue 35): a real harness PUB
// socket, the real Bridge and a real nats-server. FIGURE lines feed
// docs/reliability.md.

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
	zmq "github.com/pebbe/zmq4"
)

type lines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *lines) grep(msg string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ln := range strings.Split(l.buf.String(), "\n") {
		if strings.Contains(ln, "msg=\""+msg+"\"") {
			out = append(out, ln)
		}
	}
	return out
}

// harness is a PUB socket the bridge subscribes to.
type harness struct {
	t    *testing.T
	sock *zmq.Socket
	ep   string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	s, err := zmq.NewSocket(zmq.PUB)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSndhwm(1 << 20); err != nil { // the test's bursts must not be dropped by the sender
		t.Fatal(err)
	}
	if err := s.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, err := s.GetLastEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{t: t, sock: s, ep: ep}
}

func (h *harness) send(frames ...[]byte) {
	h.t.Helper()
	parts := make([]any, len(frames))
	for i, f := range frames {
		parts[i] = f
	}
	if _, err := h.sock.SendMessage(parts...); err != nil {
		h.t.Fatal(err)
	}
}

// record is a distinct tool record (its call id carries n), so that no
// two share a Msg-Id.
func (h *harness) record(topic string, seq uint64, n int) {
	h.t.Helper()
	h.send([]byte(topic), seqFrame(seq), pack(h.t, toolRecord(ToolStart, func(_, tool map[string]any) {
		tool["tool_call_id"] = fmt.Sprintf("call-%s-%d", topic, n)
	})))
}

// startBridge runs a Bridge on h against a fresh server until the test
// ends, once a probe on its own topic shows the subscription is live
// (PUB drops what it sends before a subscriber joins).
func startBridge(t *testing.T, h *harness, logs *lines) *Bridge {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range []streams.Config{StreamConfig(), streams.DefaultSet().DeadLetter} {
		if _, _, err := streams.Ensure(ctx, js, c); err != nil {
			t.Fatal(err)
		}
	}
	b := New(js, Config{Endpoints: []string{h.ep}, Log: slog.New(slog.NewTextHandler(logs, nil))})
	natstest.Run(t, b.Run)
	seq := uint64(0)
	natstest.Eventually(t, 10*time.Second, func() bool {
		seq++
		h.record("probe", seq, int(seq))
		return b.Stats().Received > 0
	}, "the bridge hears the harness")
	return b
}

// TestHostileHarnessFrames: malformed msgpack, a wrong schema and broken
// frames are dead-lettered by reason; a gap of 1,000 is one line with
// its range; reversals are counted, not logged; a restart (seq back to
// 1) is one line; a harness skipping every other seq 1,000 times logs
// 10 gap lines, not 1,000.
func TestHostileHarnessFrames(t *testing.T) {
	h := newHarness(t)
	logs := &lines{}
	b := startBridge(t, h, logs)
	base := b.Stats()

	bad := [][][]byte{
		{[]byte("h"), seqFrame(100), {0xc1}},                  // never-used msgpack byte
		{[]byte("h"), seqFrame(100), {0x82, 0xa1, 'a', 0x01}}, // map cut short
		{[]byte("h"), seqFrame(100), pack(t, toolRecord(ToolStart, func(top, _ map[string]any) { top["schema"] = "dynamo.agent.trace.v9" }))},
		{[]byte("h"), seqFrame(100), pack(t, toolRecord(ToolStart, func(top, _ map[string]any) { top["event_time_unix_ms"] = "soon" }))},
		{[]byte("h"), seqFrame(100), pack(t, toolRecord(ToolEnd, func(_, tool map[string]any) { tool["duration_ms"] = -1.5 }))},
		{[]byte("h"), seqFrame(100), pack(t, toolRecord(ToolStart, func(_, tool map[string]any) { tool["tool_class"] = strings.Repeat("x", 100<<10) }))},
		{[]byte("h"), {1, 2, 3, 4}, pack(t, toolRecord(ToolStart, nil))}, // seq of 4 bytes
		{[]byte("h"), seqFrame(100)}, // 2 frames
		{[]byte("h\x00bell"), seqFrame(100), pack(t, toolRecord(ToolStart, nil))},
	}
	for _, f := range bad {
		h.send(f...)
	}
	// Sequence: 1..3, a gap to 1004, reversals, on, then a restart.
	n := 0
	for _, s := range []uint64{1, 2, 3, 1004, 1000, 999, 5, 1005, 1, 2, 3} {
		n++
		h.record("h", s, n)
	}
	// A harness skipping every other seq.
	const storm = 1000
	for i := range storm + 1 {
		n++
		h.record("storm", uint64(2*i+1), n)
	}
	total := uint64(len(bad) + n)
	defer func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	}()
	// Probes still in flight when base was read may come after it: >=.
	natstest.Eventually(t, 20*time.Second, func() bool {
		s := b.Stats()
		return s.Received-base.Received >= total && s.Published+s.Duplicates+s.Malformed == s.Received
	}, "every frame read and settled")
	s := b.Stats()
	if got := s.Malformed - base.Malformed; got != uint64(len(bad)) {
		t.Errorf("malformed %d, want %d; by reason %v", got, len(bad), b.MalformedByReason())
	}
	if s.Gaps != 1+storm || s.Missed != 1000+storm || s.OutOfOrder != 3 || s.Restarts != 1 {
		t.Errorf("gaps %d missed %d out of order %d restarts %d; want %d, %d, 3, 1", s.Gaps, s.Missed, s.OutOfOrder, s.Restarts, 1+storm, 1000+storm)
	}
	gapLines := logs.grep("agent event gap")
	if len(gapLines) == 0 || !strings.Contains(gapLines[0], "after_seq=3 seq=1004") {
		t.Errorf("the first gap line %q does not give the range 3..1004", gapLines)
	}
	// Gaps 1, 2, 4, ..., 512 of 1,001: 10 lines.
	if len(gapLines) != 10 {
		t.Errorf("%d gap lines for %d gaps, want 10", len(gapLines), s.Gaps)
	}
	if r := logs.grep("agent harness restarted"); len(r) != 1 {
		t.Errorf("%d restart lines, want 1", len(r))
	}
	reasons := b.MalformedByReason()
	t.Logf("FIGURE harness frames: %d bad frames dead-lettered by %d reasons %v; gap of 1,000 one line (after_seq=3 seq=1004); 3 reversals counted, 0 lines; 1 restart, 1 line; %d gaps in a storm -> %d gap lines in all",
		s.Malformed-base.Malformed, len(reasons), reasons, storm, len(gapLines))
}

// TestHostileHarnessHugeFrame: a 64 MiB frame is refused as "record too
// large" (its dead-letter copy cut to MaxRecordBytes) and the records
// after it are heard. It is read whole first: see the note in bridge.go
// on why the SUB sets no ZMQ_MAXMSGSIZE.
func TestHostileHarnessHugeFrame(t *testing.T) {
	h := newHarness(t)
	b := startBridge(t, h, &lines{})
	before := b.Stats()
	huge := make([]byte, 64<<20)
	huge[0] = 0x81 // a msgpack map header: refused for its size, not its first byte
	h.send([]byte("h"), seqFrame(1), huge)
	h.record("h", 2, 2)
	natstest.Eventually(t, 10*time.Second, func() bool {
		s := b.Stats()
		// >=: probes in flight when before was read may be published too.
		return s.Malformed == before.Malformed+1 && s.Published >= before.Published+1 && s.Received == s.Published+s.Malformed
	}, "the huge frame refused, the record after it published")
	if n := b.MalformedByReason()["record too large"]; n != 1 {
		t.Fatalf("record too large %d, want 1", n)
	}
	t.Logf("FIGURE harness sends a 64 MiB frame: refused (record too large), dead-letter copy %d KiB, the next record published", MaxRecordBytes>>10)
}
