package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// TestAgentGroupRouting: two members of one group (the real binary
// twice) against one nats-server. Member A consumes a program's turn
// (request and response) and is stopped; member B, which never saw the
// turn, is delivered the program's tool_start and pins the context read
// back from the shared bucket. Then, with a fresh member A' and B both
// consuming, tool_end is acted on by exactly one of them: one prefetch
// of prompt and response.
func TestAgentGroupRouting(t *testing.T) {
	vec := sglangVector(t, "mha-tp2-page16") // 50 tokens, page 16
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := pypeer.StartSink(t, 2) // [0] the pin socket, [1] worker 1's hint socket
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
	member := func(name string) *proc {
		p := start(t, "run", "--nats-url", srv.ClientURL(), "--pin-endpoint", eps[0], "--agents",
			"--http-addr", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--log-format", "json")
		p.waitLine(t, 30*time.Second, "hintstream running")
		return p
	}
	a := member("a")
	agent := &schemas.NvExt{AgentContext: &schemas.AgentContext{WorkflowTypeID: "deep_research", WorkflowID: "run-42",
		ProgramID: "run-42:researcher"}}
	const session = "run-42/run-42:researcher"
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "turn-1", Model: model, TokenIDs: vec.Tokens[:40], NvExt: agent})
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "turn-1", Model: model, WorkerID: 1, NvExt: agent,
		FinishReason: "stop", OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	settled(t, ctx, js, "LLM_RESPONSES", "hintstream-responses")
	bucket, err := js.KeyValue(ctx, agents.DefaultContextBucket)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		keys, err := bucket.Keys(ctx)
		return err == nil && len(keys) == 2
	}, "member A shared the turn's request and response")

	b := member("b")
	a.stop(t) // only B is left to be delivered the tool events
	h := pypeer.StartHarnessPub(t, 0, "harness-group")
	br := start(t, "bridge", "--nats-url", srv.ClientURL(), "--agent-events", h.Endpoint())
	br.waitLine(t, 10*time.Second, "hearing agent harness")
	now := time.Now().UnixMilli()
	rec := agentRecord(agentevents.ToolStart, "run-42:researcher", "call-1", now, 0)
	natstest.Eventually(t, 20*time.Second, func() bool {
		h.Send(rec, 1) // one Msg-Id: stored once, however often sent
		return len(pinsFor(sink.Messages(), "session:"+session)) > 0
	}, "member B pinned at tool_start")
	settled(t, ctx, js, "AGENT_EVENTS", consumers.DefaultAgentEventsDurable)
	pin := pinsFor(sink.Messages(), "session:"+session)
	if len(pin) != 1 || num(t, pin[0]["tokens"]) != 48 {
		t.Fatalf("pins %v, want one of the 48 page tokens of prompt and response", pin)
	}

	a2 := member("a2")
	h.Send(agentRecord(agentevents.ToolEnd, "run-42:researcher", "call-1", now+400, 400), 2)
	sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(prefetchesFor(ms, session)) >= 1 },
		"a prefetch at tool_end")
	settled(t, ctx, js, "AGENT_EVENTS", consumers.DefaultAgentEventsDurable)
	c, err := js.Consumer(ctx, "AGENT_EVENTS", consumers.DefaultAgentEventsDurable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Both events delivered once each to the group, none redelivered.
	if info.Delivered.Consumer != 2 || info.AckFloor.Consumer != 2 {
		t.Errorf("agent events consumer delivered %d, acked to %d; want 2 and 2", info.Delivered.Consumer, info.AckFloor.Consumer)
	}
	pfs := prefetchesFor(sink.Messages(), session)
	if len(pfs) != 1 {
		t.Fatalf("%d prefetches at tool_end across the group, want exactly 1", len(pfs))
	}
	if toks, _ := pfs[0]["token_ids"].([]any); len(toks) != len(vec.Tokens) {
		t.Errorf("prefetch of %d tokens, want prompt and response (%d)", len(toks), len(vec.Tokens))
	}
	br.stop(t)
	a2.stop(t)
	b.stop(t)
}
