package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// prefetchesFor returns the kv.prefetch payloads the peer decoded for a
// session.
func prefetchesFor(ms []pypeer.Received, session string) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		acts, _ := m.Envelope["actions"].([]any)
		for _, a := range acts {
			am := a.(map[string]any)
			if pl, _ := am["payload"].(map[string]any); am["action_type"] == "kv.prefetch" && pl["session_id"] == session {
				out = append(out, pl)
			}
		}
	}
	return out
}

// TestAgentToolEvents: the real binary in `run --agents`, its requests
// naming their agent in nvext, tool events from an independent Python
// harness through `bridge --agent-events`. The response is not a tool
// call, so tool_start pins the program's context (prompt and response,
// at a priority raised by agent_hints.priority); tool_end prefetches it
// to the worker the next turn is routed to; the next turn, served there
// once the worker's KV events show the blocks, makes the prefetch used
// and the pin kept, on /metrics and in `hintstream inspect outcomes`.
func TestAgentToolEvents(t *testing.T) {
	vec := sglangVector(t, "mha-tp2-page16") // 50 tokens, page 16
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := pypeer.StartSink(t, 2) // [0] the Mooncake master's pin socket, [1] worker 1's hint socket
	eps := sink.Endpoints()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	layout := vec.Layout
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{eps[1]}, ObjectLayout: &layout}); err != nil {
		t.Fatal(err)
	}
	httpPort := freePort(t)
	httpAddr := fmt.Sprintf("127.0.0.1:%d", httpPort)
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--pin-endpoint", eps[0], "--agents",
		"--http-addr", httpAddr, "--log-format", "json")
	run.waitLine(t, 30*time.Second, "hintstream running")
	h := pypeer.StartHarnessPub(t, 0, "harness-a")
	b := start(t, "bridge", "--nats-url", srv.ClientURL(), "--agent-events", h.Endpoint())
	b.waitLine(t, 10*time.Second, "hearing agent harness")

	agent := &schemas.NvExt{
		AgentContext: &schemas.AgentContext{WorkflowTypeID: "deep_research", WorkflowID: "run-42", ProgramID: "run-42:researcher"},
		AgentHints:   &schemas.AgentHints{Priority: 10},
	}
	const session = "run-42/run-42:researcher"
	prompt, output := vec.Tokens[:40], vec.Tokens[40:]
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "turn-1", Model: model, TokenIDs: prompt, NvExt: agent})
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "turn-1", Model: model, WorkerID: 1,
		FinishReason: "stop", OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli()})
	settled(t, ctx, js, "LLM_RESPONSES", "hintstream-responses")

	now := time.Now().UnixMilli()
	start := agentRecord(agentevents.ToolStart, "run-42:researcher", "call-1", now, 0)
	start["agent_context"].(map[string]any)["workflow_type_id"] = "deep_research"
	// PUB drops what it sends before the bridge's SUB joined: the same
	// record (one Msg-Id) until the pin shows.
	natstest.Eventually(t, 20*time.Second, func() bool {
		h.Send(start, 1)
		return len(pinsFor(sink.Messages(), "session:"+session)) > 0
	}, "no pin at tool_start")
	pin := pinsFor(sink.Messages(), "session:"+session)[0]
	// 48 page tokens: priority 1, raised by agent_hints.priority 10.
	if num(t, pin["priority"]) != 11 || num(t, pin["tokens"]) != 48 {
		t.Fatalf("pin priority %v tokens %v, want 11 and 48", pin["priority"], pin["tokens"])
	}

	h.Send(agentRecord(agentevents.ToolEnd, "run-42:researcher", "call-1", now+400, 400), 2)
	sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(prefetchesFor(ms, session)) == 1 },
		"a prefetch at tool_end")
	pf := prefetchesFor(sink.Messages(), session)[0]
	if toks, _ := pf["token_ids"].([]any); len(toks) != len(vec.Tokens) {
		t.Fatalf("prefetch of %d tokens, want prompt and response (%d)", len(toks), len(vec.Tokens))
	}
	// Worker 1 loads it: its KV events show the context's blocks.
	publishStored(t, ctx, js, 1, vec.Tokens)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, httpAddr), "hintstream_kv_events_applied_total", "kind", "stored") >= 1
	}, "worker 1's KV event applied")
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "turn-2", Model: model,
		TokenIDs: append(append([]uint32{}, vec.Tokens...), 1, 2, 3), NvExt: agent})
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "turn-2", Model: model, WorkerID: 1,
		FinishReason: "stop", OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 15*time.Second, func() bool {
		m := scrape(t, httpAddr)
		return series(m, "hintstream_hint_outcomes_total", "hint", "prefetch", "outcome", "used") == 1 &&
			series(m, "hintstream_hint_outcomes_total", "hint", "pin", "outcome", "kept") == 1
	}, "outcomes prefetch used and pin kept on /metrics")
	m := scrape(t, httpAddr)
	if saved := series(m, "hintstream_prefill_tokens_saved_total"); saved != float64(len(vec.Tokens)+len(vec.Tokens)) {
		t.Errorf("prefill tokens saved %v, want %d (the prefetch's and the pin's)", saved, 2*len(vec.Tokens))
	}
	out := inspectOut(t, httpAddr, "outcomes")
	for _, want := range []string{"tool_start_pin", "tool_end_prefetch", "kept", "used", session, "web_search"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect outcomes lacks %q:\n%s", want, out)
		}
	}
	b.stop(t)
	run.stop(t)
}

// inspectOut runs `hintstream inspect` against addr; "" when it fails.
func inspectOut(t *testing.T, addr string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	p := start(t, append([]string{"inspect", "--addr", addr}, args...)...)
	<-p.done
	if p.cmd.ProcessState.ExitCode() != 0 {
		return ""
	}
	out.WriteString(strings.Join(p.lines(&p.out), "\n"))
	return out.String()
}
