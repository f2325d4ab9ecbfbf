package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// outcomeRig is the real binary in `run --agents` with pins whose TTL is
// 1–2 s, renewed for 3 s, against an embedded nats-server and one
// worker (1) whose hint socket and the pin endpoint are a Python sink.
type outcomeRig struct {
	js       jetstream.JetStream
	sink     *pypeer.Sink
	httpAddr string
	natsURL  string
	vec      sglangCase
	run      *proc
}

func startOutcomeRig(t *testing.T, ctx context.Context, extra ...string) *outcomeRig {
	t.Helper()
	vec := sglangVector(t, "mha-tp2-page16") // 50 tokens, page 16
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
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
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	args := append([]string{"run", "--nats-url", srv.ClientURL(), "--pin-endpoint", eps[0], "--agents",
		"--http-addr", httpAddr, "--log-format", "json", "--pin-min-ttl", "1s", "--pin-max-ttl", "2s",
		"--pin-slack", "0s", "--pin-renew-max", "3s"}, extra...)
	run := start(t, args...)
	run.waitLine(t, 30*time.Second, "hintstream running")
	return &outcomeRig{natsURL: srv.ClientURL(), js: js, sink: sink, httpAddr: httpAddr, vec: vec, run: run}
}

func (r *outcomeRig) outcome(t *testing.T, hint, outcome string) float64 {
	return series(scrape(t, r.httpAddr), "hintstream_hint_outcomes_total", "hint", hint, "outcome", outcome)
}

// TestAllHintOutcomes: hints made without any agent context get their
// outcomes too. A plain session's tool-call response is pinned by the
// pins (tool_call_pin); a wake-up request prefetches its context to
// worker 1 (wakeup_prefetch); worker 1's KV events show the blocks; the
// next turn, served by worker 1, makes the prefetch used and the pin
// kept. A second session's pin, renewed while it is away, lapses once
// its renewals end, and its wake-up prefetch expires.
func TestAllHintOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	r := startOutcomeRig(t, ctx)
	vec := r.vec
	prompt, output := vec.Tokens[:40], vec.Tokens[40:]
	wake := map[string]string{"x-dynamo-experimental-wakeup": "true"}
	for _, s := range []string{"plain-a", "plain-b"} {
		publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: s + "-1", SessionID: s, Model: model, TokenIDs: prompt})
		publishResponse(t, ctx, r.js, schemas.ResponseEvent{RequestID: s + "-1", SessionID: s, Model: model, WorkerID: 1,
			FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "bash"}}, OutputTokenIDs: output,
			CompletedAtMs: time.Now().UnixMilli()})
	}
	r.sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool {
		return len(pinsFor(ms, "session:plain-a")) > 0 && len(pinsFor(ms, "session:plain-b")) > 0
	}, "the tool-call pins")
	publishStored(t, ctx, r.js, 1, vec.Tokens)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, r.httpAddr), "hintstream_kv_events_applied_total", "kind", "stored") >= 1
	}, "worker 1's KV event applied")
	for _, s := range []string{"plain-a", "plain-b"} {
		publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: s + "-wake", SessionID: s, Model: model,
			TokenIDs: vec.Tokens, Headers: wake, ReceivedAtMs: time.Now().UnixMilli()})
	}
	r.sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool {
		return len(prefetchesFor(ms, "plain-a")) == 1 && len(prefetchesFor(ms, "plain-b")) == 1
	}, "the wake-up prefetches")
	publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: "plain-a-2", SessionID: "plain-a", Model: model,
		TokenIDs: append(append([]uint32{}, vec.Tokens...), 1, 2, 3)})
	publishResponse(t, ctx, r.js, schemas.ResponseEvent{RequestID: "plain-a-2", SessionID: "plain-a", Model: model,
		WorkerID: 1, FinishReason: "stop", OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 15*time.Second, func() bool {
		return r.outcome(t, "prefetch", "used") == 1 && r.outcome(t, "pin", "kept") == 1 &&
			r.outcome(t, "prefetch", "expired") == 1 && r.outcome(t, "pin", "lapsed") == 1
	}, "prefetch used and expired, pin kept and lapsed on /metrics")
	// plain-b's pin was renewed (its slot pinned again) before it lapsed.
	if n := len(pinsFor(r.sink.Messages(), "session:plain-b")); n < 2 {
		t.Errorf("plain-b's slot pinned %d times, want renewals", n)
	}
	m := scrape(t, r.httpAddr)
	for _, o := range []string{"wrong_worker", "not_loaded"} {
		if v := series(m, "hintstream_hint_outcomes_total", "hint", "prefetch", "outcome", o); v != 0 {
			t.Errorf("prefetch/%s = %v, want 0", o, v)
		}
	}
	if saved := series(m, "hintstream_prefill_tokens_saved_total"); saved != float64(len(vec.Tokens)+48) {
		t.Errorf("prefill tokens saved %v, want %d (the prefetch's 50 and the pin's 48 page tokens)", saved, len(vec.Tokens)+48)
	}
	out := inspectOut(t, r.httpAddr, "outcomes")
	for _, want := range []string{"wakeup_prefetch", "tool_call_pin", "used", "kept", "lapsed", "expired", "plain-a", "plain-b"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect outcomes lacks %q:\n%s", want, out)
		}
	}
	r.run.stop(t)
}

// TestAgentToolEndNeverComes: an agent's tool starts and its tool_end
// never comes. The tool_start pin is renewed by the pins while the
// program is away, until --pin-renew-max, then lapses: counted on
// /metrics and listed by `hintstream inspect outcomes`; no prefetch is
// sent for the program.
func TestAgentToolEndNeverComes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	r := startOutcomeRig(t, ctx)
	vec := r.vec
	h := pypeer.StartHarnessPub(t, 0, "harness-never")
	b := start(t, "bridge", "--nats-url", r.natsURL, "--agent-events", h.Endpoint())
	b.waitLine(t, 10*time.Second, "hearing agent harness")
	agent := &schemas.NvExt{AgentContext: &schemas.AgentContext{WorkflowTypeID: "deep_research", WorkflowID: "run-42",
		ProgramID: "run-42:stuck"}}
	const session = "run-42/run-42:stuck"
	publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: "stuck-1", Model: model, TokenIDs: vec.Tokens[:40], NvExt: agent})
	publishResponse(t, ctx, r.js, schemas.ResponseEvent{RequestID: "stuck-1", Model: model, WorkerID: 1,
		FinishReason: "stop", OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	settled(t, ctx, r.js, "LLM_RESPONSES", "hintstream-responses")
	rec := agentRecord(agentevents.ToolStart, "run-42:stuck", "call-1", time.Now().UnixMilli(), 0)
	natstest.Eventually(t, 20*time.Second, func() bool {
		h.Send(rec, 1)
		return len(pinsFor(r.sink.Messages(), "session:"+session)) > 0
	}, "no pin at tool_start")
	pinnedAt := time.Now()
	natstest.Eventually(t, 20*time.Second, func() bool { return r.outcome(t, "pin", "lapsed") == 1 },
		"the tool_start pin lapsed")
	// Renewed first: it lapses no sooner than --pin-renew-max (3 s) after
	// the response, well past its first TTL (at most 2 s).
	if n := len(pinsFor(r.sink.Messages(), "session:"+session)); n < 2 {
		t.Errorf("the pin was sent %d times, want renewals before it lapsed", n)
	}
	if waited := time.Since(pinnedAt); waited < time.Second {
		t.Errorf("lapsed %v after the pin, before its renewals ended", waited)
	}
	if n := len(prefetchesFor(r.sink.Messages(), session)); n != 0 {
		t.Errorf("%d prefetches for a tool that never ended", n)
	}
	if v := r.outcome(t, "pin", "kept"); v != 0 {
		t.Errorf("pin/kept = %v", v)
	}
	out := inspectOut(t, r.httpAddr, "outcomes")
	if !strings.Contains(out, "tool_start_pin") || !strings.Contains(out, "lapsed") || !strings.Contains(out, session) {
		t.Errorf("inspect outcomes lacks the lapsed tool_start pin:\n%s", out)
	}
	b.stop(t)
	r.run.stop(t)
}

// TestPredictedPrefetchOnTime: once web_search has two learned durations
// (1.5 s), a tool_start schedules the program's prefetch at start + 1.5 s
// − load time. The prefetch reaches worker 1 before the harness's
// tool_end, which then counts it on_time (and sends no second prefetch);
// the next turn, served by worker 1 with the blocks on its device, makes
// it used.
func TestPredictedPrefetchOnTime(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	r := startOutcomeRig(t, ctx, "--agent-predict-min-samples", "2", "--l3-bandwidth", "1000")
	vec := r.vec
	h := pypeer.StartHarnessPub(t, 0, "harness-predict")
	b := start(t, "bridge", "--nats-url", r.natsURL, "--agent-events", h.Endpoint())
	b.waitLine(t, 10*time.Second, "hearing agent harness")
	// Two durations learned from tool_ends of programs the members never
	// saw: PUB drops what it sends before the SUB joined, so each is sent
	// (one Msg-Id) until stored.
	for i := range 2 {
		seq := int64(i + 1)
		sample := agentRecord(agentevents.ToolEnd, fmt.Sprintf("other-%d", i), "c", time.Now().UnixMilli(), 1500)
		natstest.Eventually(t, 20*time.Second, func() bool {
			h.Send(sample, seq)
			return streamMsgs(t, r.js, "AGENT_EVENTS") == uint64(seq)
		}, "sample %d stored", seq)
	}
	settled(t, ctx, r.js, "AGENT_EVENTS", "hintstream-agent-events")

	agent := &schemas.NvExt{AgentContext: &schemas.AgentContext{WorkflowTypeID: "deep_research", WorkflowID: "run-42",
		ProgramID: "run-42:predicted"}}
	const session = "run-42/run-42:predicted"
	publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: "pred-1", Model: model, TokenIDs: vec.Tokens[:40], NvExt: agent})
	publishResponse(t, ctx, r.js, schemas.ResponseEvent{RequestID: "pred-1", Model: model, WorkerID: 1, NvExt: agent,
		FinishReason: "stop", OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	settled(t, ctx, r.js, "LLM_RESPONSES", "hintstream-responses")
	started := time.Now()
	h.Send(agentRecord(agentevents.ToolStart, "run-42:predicted", "call-p", started.UnixMilli(), 0), 3)
	r.sink.WaitFor(t, 10*time.Second, func(ms []pypeer.Received) bool { return len(prefetchesFor(ms, session)) == 1 },
		"the predicted prefetch")
	lead := time.Since(started)
	if lead < time.Second {
		t.Fatalf("prefetch %v after tool_start, want about the predicted 1.5 s", lead)
	}
	// The tool ends now: after the prefetch came, before it expired.
	h.Send(agentRecord(agentevents.ToolEnd, "run-42:predicted", "call-p", time.Now().UnixMilli(), float64(lead.Milliseconds())), 4)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, r.httpAddr), "hintstream_agent_predicted_prefetch_total", "timing", "on_time") == 1
	}, "the predicted prefetch counted on_time")
	publishStored(t, ctx, r.js, 1, vec.Tokens)
	natstest.Eventually(t, 10*time.Second, func() bool {
		return series(scrape(t, r.httpAddr), "hintstream_kv_events_applied_total", "kind", "stored") >= 1
	}, "worker 1's KV event applied")
	publishRequest(t, ctx, r.js, schemas.RequestEvent{RequestID: "pred-2", Model: model,
		TokenIDs: append(append([]uint32{}, vec.Tokens...), 1, 2, 3), NvExt: agent})
	publishResponse(t, ctx, r.js, schemas.ResponseEvent{RequestID: "pred-2", Model: model, WorkerID: 1, NvExt: agent,
		FinishReason: "stop", OutputTokenIDs: vec.Tokens[40:], CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 10*time.Second, func() bool { return r.outcome(t, "prefetch", "used") == 1 },
		"the predicted prefetch used")
	if n := len(prefetchesFor(r.sink.Messages(), session)); n != 1 {
		t.Errorf("%d prefetches, want the predicted one only (on time: none at tool_end)", n)
	}
	m := scrape(t, r.httpAddr)
	for _, timing := range []string{"early", "late"} {
		if v := series(m, "hintstream_agent_predicted_prefetch_total", "timing", timing); v != 0 {
			t.Errorf("predicted %s = %v, want 0", timing, v)
		}
	}
	out := inspectOut(t, r.httpAddr, "outcomes")
	found := false
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "predicted_prefetch") && strings.Contains(line, "on_time") && strings.Contains(line, "used") {
			found = true
		}
	}
	if !found {
		t.Errorf("inspect outcomes lacks the predicted prefetch, on_time and used:\n%s", out)
	}
	b.stop(t)
	r.run.stop(t)
}
