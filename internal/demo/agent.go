package demo

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/hintstream/hintstream/ingest/agentevents"
	"github.com/hintstream/hintstream/internal/retry"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	zmq "github.com/pebbe/zmq4"
	"github.com/tinylib/msgp/msgp"
)

// The demo's agent: one program of a deep-research workflow whose every
// turn ends in a web search, told by a harness on a ZeroMQ PUB socket
// (Dynamo's [topic, seq, msgpack(record)]) that an in-process
// agentevents.Bridge republishes to AGENT_EVENTS, as `hintstream bridge
// --agent-events` does. hintstream (run --agents) pins the context at
// tool_start, prefetches it at tool_end, and the next turn shows whether
// the hints were used.
const (
	agentWorkflowType = "deep_research"
	agentWorkflow     = "demo-run"
	agentProgram      = "demo-run:researcher"
	agentTool         = "web_search"
	agentToolTime     = 1500 * time.Millisecond
)

type harness struct {
	sock *zmq.Socket
	seq  uint64
}

func (h *harness) send(event, callID string, startMs int64, dur time.Duration) error {
	tool := map[string]any{"tool_call_id": callID, "tool_class": agentTool, "started_at_unix_ms": startMs}
	if event != agentevents.ToolStart {
		tool["status"], tool["duration_ms"] = "succeeded", float64(dur.Milliseconds())
		tool["ended_at_unix_ms"] = startMs + dur.Milliseconds()
	}
	rec, err := msgp.AppendIntf(nil, map[string]any{
		"schema": agentevents.SchemaV1, "event_type": event, "event_time_unix_ms": time.Now().UnixMilli(),
		"event_source": "harness", "tool": tool,
		"agent_context": map[string]any{"workflow_type_id": agentWorkflowType, "workflow_id": agentWorkflow, "program_id": agentProgram},
	})
	if err != nil {
		return err
	}
	h.seq++
	_, err = h.sock.SendMessage("", binary.BigEndian.AppendUint64(nil, h.seq), rec)
	return err
}

// runAgent plays the agent until ctx ends.
func (d *Demo) runAgent(ctx context.Context) error {
	zctx, err := zmq.NewContext()
	if err != nil {
		return err
	}
	defer zctx.Term()
	sock, err := zctx.NewSocket(zmq.PUB)
	if err != nil {
		return err
	}
	defer sock.Close()
	if err := sock.SetLinger(0); err != nil {
		return err
	}
	if err := sock.Bind("tcp://" + d.opts.BindHost + ":*"); err != nil {
		return err
	}
	ep, err := sock.GetLastEndpoint()
	if err != nil {
		return err
	}
	if _, _, err := streams.Ensure(ctx, d.js, agentevents.StreamConfig()); err != nil {
		return err
	}
	br := agentevents.New(d.js, agentevents.Config{Endpoints: []string{ep}, Log: d.opts.Logger})
	brDone := make(chan error, 1)
	go func() { brDone <- br.Run(ctx) }()
	defer func() { <-brDone }()
	fmt.Fprintf(d.opts.Out, "demo: agent harness (simulated) publishes tool events at %s; bridged to %s\n", ep, agentevents.DefaultStream)

	h := &harness{sock: sock}
	nv := &schemas.NvExt{AgentContext: &schemas.AgentContext{WorkflowTypeID: agentWorkflowType, WorkflowID: agentWorkflow,
		ProgramID: agentProgram}, AgentHints: &schemas.AgentHints{Priority: 20}}
	session := schemas.AgentSession(nv.AgentContext)
	prompt := append(tokens(1000, 2*BlockSize), tokens(70000, 8*BlockSize)...)
	worker := uint64(2) // the least loaded: where a router sends an uncached prompt
	wait := func(d time.Duration) bool { return retry.Wait(ctx, d) }
	if !wait(2 * d.opts.Interval) { // the bridge's SUB joins the PUB
		return nil
	}
	for turn := 1; ctx.Err() == nil; turn++ {
		id := fmt.Sprintf("demo-%s-agent-%d", d.run, turn)
		req := &schemas.RequestEvent{RequestID: id, Model: Model, TokenIDs: prompt, NvExt: nv, ReceivedAtMs: time.Now().UnixMilli()}
		fmt.Fprintf(d.opts.Out, "demo: → agent %s turn %d (%s, nvext.agent_context, priority 20), %d tokens\n",
			session, turn, id, len(prompt))
		if err := d.pub.PublishRequest(ctx, req); err != nil {
			return nil
		}
		if !wait(d.opts.Interval / 4) {
			return nil
		}
		output := tokens(80000+uint32(turn)*100, 2*BlockSize)
		if err := d.pub.PublishResponse(ctx, &schemas.ResponseEvent{RequestID: id, Model: Model, WorkerID: worker,
			FinishReason: "stop", OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli(), NvExt: nv}); err != nil {
			return nil
		}
		for _, l := range d.outcomes() {
			fmt.Fprintf(d.opts.Out, "demo: ✓ outcome %s\n", l)
		}
		if !wait(100 * time.Millisecond) {
			return nil
		}
		start := time.Now()
		call := fmt.Sprintf("call-%d", turn)
		fmt.Fprintf(d.opts.Out, "demo: → harness tool_start %s (%s): expect a pin of the context at tool_start\n", agentTool, call)
		if err := h.send(agentevents.ToolStart, call, start.UnixMilli(), 0); err != nil {
			return err
		}
		if !wait(agentToolTime) {
			return nil
		}
		fmt.Fprintf(d.opts.Out, "demo: → harness tool_end %s (%s) after %v: expect a prefetch of prompt and response\n",
			agentTool, call, agentToolTime)
		if err := h.send(agentevents.ToolEnd, call, start.UnixMilli(), agentToolTime); err != nil {
			return err
		}
		ctxTokens := append(append([]uint32{}, prompt...), output...)
		// The worker that got the prefetch loads the context: its KV
		// events show the blocks, and a KV-aware router sends the next
		// turn there.
		if got, ok := d.waitPrefetch(ctx, session, turn); ok {
			worker = got
			if err := d.storeAll(ctx, worker, ctxTokens); err == nil {
				fmt.Fprintf(d.opts.Out, "demo: ← worker %d loaded the context (its KV events show %d blocks)\n",
					worker, len(ctxTokens)/BlockSize)
			}
		}
		if !wait(d.opts.Interval / 4) {
			return nil
		}
		prompt = append(ctxTokens, tokens(90000+uint32(turn)*100, 24)...)
	}
	return nil
}

// waitPrefetch waits (2 s at most) for a worker to receive an agent
// prefetch for session, and returns that worker.
func (d *Demo) waitPrefetch(ctx context.Context, session string, turn int) (uint64, bool) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(2 * time.Second)
	want := fmt.Sprintf("call-%d", turn)
	for time.Now().Before(deadline) {
		for _, r := range d.Received() {
			if r.SessionID == session && strings.HasSuffix(r.RequestID, want) {
				return r.WorkerID, true
			}
		}
		select {
		case <-ctx.Done():
			return 0, false
		case <-tick.C:
		}
	}
	return 0, false
}

// outcomes returns the hint outcomes decided since the last call.
func (d *Demo) outcomes() []string {
	if d.opts.Outcomes == nil {
		return nil
	}
	return d.opts.Outcomes()
}
