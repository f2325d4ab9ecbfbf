package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
	"github.com/hintstream/hintstream/schemas"
)

// startStandin runs a stand-in engine for the test.
func startStandin(t *testing.T, args ...string) *standin.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(standin.Timeout))
	defer cancel()
	e, err := standin.Start(ctx, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func standinStats(t *testing.T, e *standin.Engine) standin.Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(5*time.Second))
	defer cancel()
	s, err := e.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAdapterWarmsSGLang: the whole path with the shipped binary: a
// wake-up on the bus, `hintstream run` picks the registered worker, whose
// hint endpoint is `hintstream adapter`, which calls the SGLang stand-in's
// /generate with the prompt's tokens; the adapter's /metrics and
// /healthz follow run's.
func TestAdapterWarmsSGLang(t *testing.T) {
	eng := startStandin(t, "--engine", "sglang")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ad := start(t, "adapter", "--bind", ep, "--engine", "sglang", "--engine-url", eng.URL, "--http-addr", httpAddr)
	ad.waitLine(t, 10*time.Second, "adapter listening")
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json")
	run.waitLine(t, 30*time.Second, "hintstream running")
	start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "9", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", ep, "--interval", "1s")
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

	prompt := seq(7, 50)
	publishRequest(t, ctx, js, wake("ad-1", "s-ad", prompt))
	natstest.Eventually(t, 15*time.Second, func() bool { return len(standinStats(t, eng).Accepted) == 1 }, "the warm-up call")
	got := standinStats(t, eng).Accepted[0].Body
	ids, _ := got["input_ids"].([]any)
	if len(ids) != len(prompt) || ids[0] != float64(prompt[0]) || ids[49] != float64(prompt[49]) {
		t.Fatalf("input_ids %v, want the prompt's 50 tokens", got["input_ids"])
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		return series(scrape(t, httpAddr), "hintstream_adapter_engine_calls_total", "action", "kv.prefetch") == 1
	}, "the call counted on /metrics")
	resp, err := http.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz %d %q", resp.StatusCode, body)
	}
}

// TestAdapterRetainOnWorker: `run --retain-on-worker` without a Mooncake
// pin endpoint: a tool-call response sends the serving worker a
// hintstream.retain, and the adapter in front of the vLLM stand-in turns it into
// a one-token request whose vllm.set_priority carries the session's
// claim, the pin's priority and its TTL.
func TestAdapterRetainOnWorker(t *testing.T) {
	eng := startStandin(t, "--engine", "vllm", "--model", model)
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	ad := start(t, "adapter", "--bind", ep, "--engine", "vllm", "--engine-url", eng.URL)
	ad.waitLine(t, 10*time.Second, "adapter listening")
	run := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--retain-on-worker",
		"--tool-time-default", "20s", "--pin-headroom", "1", "--pin-slack", "5s")
	run.waitLine(t, 30*time.Second, "hintstream running")
	start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "9", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", ep, "--interval", "1s")
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

	prompt, output := seq(3, 200), seq(900, 40)
	req := schemas.RequestEvent{RequestID: "turn-1", SessionID: "s-tool", Model: model, TokenIDs: prompt,
		ReceivedAtMs: time.Now().UnixMilli()}
	publishRequest(t, ctx, js, req)
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "turn-1", SessionID: "s-tool", Model: model, WorkerID: 9,
		FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "web_search"}}, OutputTokenIDs: output,
		CompletedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 20*time.Second, func() bool { return len(standinStats(t, eng).Accepted) == 1 }, "the retain call")
	s := standinStats(t, eng)
	if len(s.Rejected) != 0 {
		t.Fatalf("stand-in rejected %+v", s.Rejected)
	}
	b := s.Accepted[0].Body
	if p, _ := b["prompt"].([]any); len(p) != len(prompt)+len(output) || b["max_tokens"] != float64(1) || b["model"] != model {
		t.Fatalf("request %v: want the turn's %d tokens, max_tokens 1", b, len(prompt)+len(output))
	}
	pl := b["kv_hints"].(map[string]any)["actions"].([]any)[0].(map[string]any)["payload"].(map[string]any)
	if pl["claim_id"] != "hintstream/s-tool" || pl["value"] != float64(actions.Priority(len(prompt)+len(output))) ||
		pl["ttl_seconds"] != float64(25) {
		t.Fatalf("set_priority %v: want claim hintstream/s-tool, priority %d, ttl 25s", pl, actions.Priority(240))
	}
}

// TestDemoEngine: `make run ARGS="--demo-engine sglang"`: every wake-up a
// demo worker receives also reaches the adapter, which warms the SGLang
// stand-in (200) once per wake-up.
func TestDemoEngine(t *testing.T) {
	p := start(t, "run", "--demo", "--demo-engine", "sglang", "--demo-interval", "50ms", "--demo-count", "5", // 4 wake-ups, 1 plain
		"--embedded-port", "0", "--data-dir", t.TempDir())
	p.waitLine(t, 30*time.Second, "in front of a sglang stand-in")
	count := func() (got, warmed int) {
		for _, l := range p.lines(&p.out) {
			if strings.Contains(l, "got kv.prefetch for") {
				got++
			}
			if strings.Contains(l, "adapter warmed the sglang stand-in: POST /generate → 200") {
				warmed++
			}
		}
		return got, warmed
	}
	natstest.Eventually(t, 30*time.Second, func() bool { got, warmed := count(); return got == 4 && warmed == 4 },
		"4 wake-ups received and warmed")
	// A clean exit (the demo may already have ended after its count)
	// stops the stand-in too.
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(natstest.Within(15 * time.Second)):
		t.Fatal("hintstream did not stop after SIGINT")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("hintstream exit code %d", code)
	}
}
