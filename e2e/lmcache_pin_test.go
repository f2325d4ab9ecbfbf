package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/standin"
	"github.com/hintstream/hintstream/schemas"
)

// TestRunPinsInLMCache: `run --lmcache-controller` with no Mooncake
// endpoint, against the controller stand-in (internal/standin, written
// from LMCache's source). It says at start where pins go; a tool call
// becomes a POST /pin of the turn's tokens to the serving worker's
// LMCache instance, pinned again while the tool runs; the session's next
// turn releases it (no more /pin, and LMCache drops it within its pin
// timeout, long before hintstream's TTL); a pin whose TTL runs out is
// let go at its deadline; a run restarted after a pin's deadline forgets
// that pin without a call and resumes a pin still due.
func TestRunPinsInLMCache(t *testing.T) {
	const pinTimeout = 2 * time.Second // LMCache's pin_timeout_sec in this deployment
	ctl := standin.NewLMCacheController(pinTimeout, "vllm-9")
	defer ctl.Close()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	args := []string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--pins", "on",
		"--lmcache-controller", ctl.URL, "--lmcache-instance", "vllm-{worker_id}", "--lmcache-repin", "500ms",
		"--pin-headroom", "1", "--pin-slack", "0s", "--pin-min-ttl", "1s", "--pin-renew-max", "0"}
	run := start(t, args...)
	line := run.waitLine(t, 30*time.Second, `"kind":"pin"`)
	if !strings.Contains(line, "LMCache controller "+ctl.URL) || strings.Contains(line, "Mooncake") {
		t.Fatalf("pin targets line %s", line)
	}
	run.waitLine(t, 30*time.Second, "hintstream running")
	start(t, "register", "--nats-url", srv.ClientURL(), "--worker-id", "9", "--model", model,
		"--kv-block-size", "16", "--hint-endpoint", fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t)), "--interval", "1s")
	run.waitLine(t, 30*time.Second, `"msg":"worker joined"`)

	// toolCall publishes a turn of session that ends in a tool call
	// announced to last toolMs, and returns the tokens its pin holds.
	base := uint32(0)
	toolCall := func(session string, toolMs int) []uint32 {
		base += 1000
		prompt, output := seq(base, 48), seq(base+500, 8)
		id := session + "-1"
		publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: id, SessionID: session, Model: model, TokenIDs: prompt,
			Headers: map[string]string{schemas.HeaderSimToolCall: fmt.Sprint(toolMs)}, ReceivedAtMs: time.Now().UnixMilli()})
		publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: id, SessionID: session, Model: model, WorkerID: 9,
			FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "run_tests"}}, OutputTokenIDs: output,
			CompletedAtMs: time.Now().UnixMilli()})
		return append(prompt, output...)
	}
	pinsOf := func(tokens []uint32, after time.Time) int {
		n := 0
		for _, p := range ctl.Pins() {
			if slices.Equal(p.Tokens, tokens) && p.At.After(after) {
				if p.Instance != "vllm-9" || p.Location != "LocalCPUBackend" || len(p.Unknown) != 0 {
					t.Fatalf("/pin %+v", p)
				}
				n++
			}
		}
		return n
	}

	// Released by the next turn: its tool takes a minute, it returns now.
	released := toolCall("s-released", 60000)
	natstest.Eventually(t, 20*time.Second, func() bool { return pinsOf(released, time.Time{}) >= 2 }, "pinned and re-pinned")
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "s-released-2", SessionID: "s-released", Model: model,
		TokenIDs: released, ReceivedAtMs: time.Now().UnixMilli()})
	natstest.Eventually(t, 20*time.Second, func() bool { return !ctl.Pinned("vllm-9", released) }, "LMCache let the released pin go")
	// Lapsed: a 1.5 s tool that never returns.
	lapsing := toolCall("s-lapsed", 1500)
	natstest.Eventually(t, 20*time.Second, func() bool { return pinsOf(lapsing, time.Time{}) >= 1 }, "the short pin")
	lapseBy := firstPin(ctl, lapsing).Add(1500 * time.Millisecond)
	natstest.Eventually(t, 20*time.Second, func() bool { return time.Now().After(lapseBy) && !ctl.Pinned("vllm-9", lapsing) },
		"LMCache let the lapsed pin go")
	if n := pinsOf(lapsing, lapseBy.Add(natstest.Within(time.Second))); n != 0 {
		t.Fatalf("%d /pin of the lapsed pin after its deadline", n)
	}
	// The released pin was never pinned again after LMCache let it go.
	if n := pinsOf(released, time.Now().Add(-pinTimeout)); n != 0 {
		t.Fatalf("%d /pin of the released pin after its release", n)
	}

	// Restart: one pin still due, one whose deadline passes while no
	// hintstream runs.
	live := toolCall("s-live", 60000)
	short := toolCall("s-short", 2500)
	natstest.Eventually(t, 20*time.Second, func() bool { return pinsOf(live, time.Time{}) >= 1 && pinsOf(short, time.Time{}) >= 1 }, "both pinned")
	shortBy := firstPin(ctl, short).Add(2500 * time.Millisecond)
	run.stop(t)
	natstest.Eventually(t, 20*time.Second, func() bool { return time.Now().After(shortBy) }, "the short pin's deadline passed")
	restarted := time.Now()
	run = start(t, args...)
	adopt := run.waitLine(t, 30*time.Second, "LMCache pins taken over from the store")
	if !strings.Contains(adopt, `"adopted":1`) || !strings.Contains(adopt, `"lapsed":1`) {
		t.Fatalf("take-over line %s: want the live pin adopted, the short one lapsed", adopt)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return pinsOf(live, restarted) >= 1 }, "the live pin pinned again after the restart")
	if n := pinsOf(short, restarted); n != 0 {
		t.Fatalf("%d /pin of the lapsed pin after the restart", n)
	}
	if ctl.Refused() != 0 {
		t.Fatalf("the controller refused %d bodies", ctl.Refused())
	}
}

// firstPin is when tokens were first pinned: a pin's deadline is its TTL
// after it was held, which its first /pin follows.
func firstPin(ctl *standin.LMCacheController, tokens []uint32) time.Time {
	for _, p := range ctl.Pins() {
		if slices.Equal(p.Tokens, tokens) {
			return p.At
		}
	}
	return time.Time{}
}
