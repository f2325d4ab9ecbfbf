package e2e

import (
	"context"
	be "encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/nats-io/nats.go/jetstream"
)

// agentRecord is a harness tool record as Dynamo's docs show it
// (docs/agents/agent-tracing.md), for the Python publisher to pack.
func agentRecord(event, program, callID string, atMs int64, durationMs float64) map[string]any {
	tool := map[string]any{"tool_call_id": callID, "tool_class": "web_search"}
	if event != agentevents.ToolStart {
		tool["status"], tool["duration_ms"] = "succeeded", durationMs
	}
	return map[string]any{
		"schema": agentevents.SchemaV1, "event_type": event, "event_time_unix_ms": atMs, "event_source": "harness",
		"agent_context": map[string]any{"workflow_type_id": "deep_research", "workflow_id": "run-42", "program_id": program},
		"tool":          tool,
	}
}

func streamMsgs(t *testing.T, js jetstream.JetStream, name string) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(5*time.Second))
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0
	}
	return info.State.Msgs
}

// statLine returns the value of key=N in the agent bridge's stop line.
func statValue(line, key string) string {
	i := strings.Index(line, key+"=")
	if i < 0 {
		return ""
	}
	v := line[i+len(key)+1:]
	if j := strings.IndexAny(v, " \n"); j >= 0 {
		v = v[:j]
	}
	return v
}

// TestAgentBridge: an independent Python harness binds a PUB socket and
// sends Dynamo's tool-event frames; `hintstream bridge --agent-events`
// stores each record once in AGENT_EVENTS, counts the gap a reordered
// pair makes, dead-letters every bad frame with its reason, keeps a
// restarted harness's seq 1 apart from its first incarnation's, and
// stores nothing twice across a bridge restart.
func TestAgentBridge(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	port := freePort(t)
	h := pypeer.StartHarnessPub(t, port, "")
	ep := h.Endpoint()
	startBridge := func() *proc {
		return start(t, "bridge", "--nats-url", srv.ClientURL(), "--agent-events", ep, "--log-format", "text")
	}
	b := startBridge()
	b.waitLine(t, 10*time.Second, "hearing agent harness")
	base := time.Now().UnixMilli()
	// PUB drops what it sends before the SUB has joined: send seq 1 until
	// it is stored. Every copy has one Msg-Id, so the stream holds one.
	first := agentRecord(agentevents.ToolStart, "run-42:researcher", "call-1", base, 0)
	natstest.Eventually(t, 10*time.Second, func() bool {
		h.Send(first, 1)
		return streamMsgs(t, js, agentevents.DefaultStream) >= 1
	}, "the first record never reached AGENT_EVENTS")
	h.Send(agentRecord(agentevents.ToolEnd, "run-42:researcher", "call-1", base+420, 420), 2)
	// Reordered: 4 before 3 (a gap of one, then one out of order); 4 again
	// (a duplicate: same bytes, same Msg-Id).
	r4 := agentRecord(agentevents.ToolStart, "run-42:writer", "call-4", base+500, 0)
	h.Send(r4, 4)
	h.Send(agentRecord(agentevents.ToolStart, "run-42:critic", "call-3", base+450, 0), 3)
	h.Send(r4, 4)
	// Bad frames: two frames, a short seq, garbage, a request_end, a huge id.
	seq := func(n uint64) []byte { return be.BigEndian.AppendUint64(nil, n) }
	h.Raw([]byte{}, seq(5))
	h.Raw([]byte{}, []byte{0, 5}, []byte{0x80})
	h.Raw([]byte{}, seq(5), []byte("not msgpack"))
	reqEnd := agentRecord(agentevents.ToolStart, "run-42:x", "c", base, 0)
	reqEnd["event_type"] = "request_end"
	h.Send(reqEnd, 5)
	h.Send(agentRecord(agentevents.ToolStart, strings.Repeat("p", 5000), "c", base, 0), 6)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return streamMsgs(t, js, "HINTSTREAM_DLQ") == 5
	}, "5 bad frames dead-lettered (have %d)", streamMsgs(t, js, "HINTSTREAM_DLQ"))
	natstest.Eventually(t, 10*time.Second, func() bool { return streamMsgs(t, js, agentevents.DefaultStream) == 4 },
		"4 distinct records stored (have %d)", streamMsgs(t, js, agentevents.DefaultStream))

	// The harness restarts on the same port: seq 1 again, another record.
	h.Stop()
	h = pypeer.StartHarnessPub(t, port, "")
	second := agentRecord(agentevents.ToolStart, "run-42:researcher", "call-9", base+9000, 0)
	natstest.Eventually(t, 10*time.Second, func() bool {
		h.Send(second, 1)
		return streamMsgs(t, js, agentevents.DefaultStream) == 5
	}, "the restarted harness's seq 1 was not stored beside the first's")

	// The bridge restarts: seq 1 and 2 sent again are already stored.
	b.stop(t)
	stopLine := b.waitLine(t, time.Second, "agent bridge stopped")
	for key, want := range map[string]string{"stats.gaps": "1", "stats.missed": "1", "stats.malformed": "5", "stats.restarts": "1"} {
		if got := statValue(stopLine, key); got != want {
			t.Errorf("%s = %q, want %s: %s", key, got, want, stopLine)
		}
	}
	if got := statValue(stopLine, "stats.out_of_order"); got == "" || got == "0" {
		t.Errorf("no out-of-order seq counted: %s", stopLine)
	}
	b = startBridge()
	b.waitLine(t, 10*time.Second, "hearing agent harness")
	third := agentRecord(agentevents.ToolEnd, "run-42:researcher", "call-9", base+9500, 500)
	natstest.Eventually(t, 10*time.Second, func() bool {
		h.Send(second, 1) // stored before the bridge restarted
		h.Send(third, 2)
		return streamMsgs(t, js, agentevents.DefaultStream) >= 6
	}, "the record after the bridge restart was not stored")
	if n := streamMsgs(t, js, agentevents.DefaultStream); n != 6 {
		t.Fatalf("AGENT_EVENTS holds %d records, want 6: something was stored twice", n)
	}
	// Subjects and headers as documented.
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(5*time.Second))
	defer cancel()
	s, err := js.Stream(ctx, agentevents.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "agent.events.run-42" || m.Header.Get(agentevents.HeaderSeq) != "1" ||
		m.Header.Get(agentevents.HeaderPublisher) != ep || m.Header.Get("Nats-Msg-Id") == "" {
		t.Errorf("stored %s %v", m.Subject, m.Header)
	}
	if _, err := agentevents.Decode(m.Data, m.Header.Get("Content-Type")); err != nil {
		t.Errorf("stored record does not decode: %v", err)
	}
	dlq, err := js.Stream(ctx, "HINTSTREAM_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for i := uint64(1); i <= 5; i++ {
		dm, err := dlq.GetMsg(ctx, i)
		if err != nil {
			t.Fatal(err)
		}
		if dm.Subject != agentevents.DefaultDeadLetter {
			t.Errorf("dead letter on %s", dm.Subject)
		}
		reasons = append(reasons, dm.Header.Get("Hintstream-Error"))
	}
	want := []string{"not 3 frames", "seq not 8 bytes", "record not a msgpack map", "not a tool event", "agent_context program_id too long"}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("dead-letter reasons %q, want %q", reasons, want)
	}
	b.stop(t)
}
