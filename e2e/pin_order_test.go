package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// sinkPin is one kv.pin line `hintstream sink` printed (applied).
type sinkPin struct {
	MessageID string `json:"message_id"`
	Payload   struct {
		Slot     string `json:"slot"`
		TTLMs    int64  `json:"ttl_ms"`
		Revision uint64 `json:"revision"`
	} `json:"payload"`
}

func sinkPins(p *proc) []sinkPin {
	var out []sinkPin
	for _, l := range p.lines(&p.out) {
		var sp sinkPin
		if json.Unmarshal([]byte(l), &sp) == nil && strings.HasPrefix(sp.Payload.Slot, "session:") {
			out = append(out, sp)
		}
	}
	return out
}

// TestPinsInOrder (issue 26, finding 6): each session's next request and
// its tool-call response are published within 0-2 ms of each other, so
// the release of the session's previous pin and its next pin race, on
// one member and across two. `hintstream sink`, the master's stand-in,
// applies what the revision rule lets through (docs/wire.md); every
// session must end with its new pin applied, none released.
func TestPinsInOrder(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	for _, members := range []int{1, 2} {
		t.Run(fmt.Sprintf("members=%d", members), func(t *testing.T) { pinsInOrder(t, members) })
	}
}

func pinsInOrder(t *testing.T, members int) {
	const sessions = 150
	vec := sglangVector(t, "mha-tp2-page16")
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(120*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	ep := fmt.Sprintf("tcp://127.0.0.1:%d", freePort(t))
	master := start(t, "sink", "--bind", ep)
	master.waitLine(t, 10*time.Second, "sink listening")
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	layout := vec.Layout
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:1"}, ObjectLayout: &layout}); err != nil {
		t.Fatal(err)
	}
	var procs []*proc
	for range members {
		p := start(t, "run", "--nats-url", srv.ClientURL(), "--pin-endpoint", ep, "--log-format", "json")
		p.waitLine(t, 30*time.Second, "hintstream running")
		procs = append(procs, p)
	}
	prompt, output := vec.Tokens[:40], vec.Tokens[40:]
	turn := func(n, i int) {
		id, s := fmt.Sprintf("t%d-%d", n, i), fmt.Sprintf("s-%d", i)
		publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: id, SessionID: s, Model: model, TokenIDs: prompt,
			ReceivedAtMs: time.Now().UnixMilli()})
		publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: id, SessionID: s, Model: model, WorkerID: 1,
			FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "search"}}, OutputTokenIDs: output,
			CompletedAtMs: time.Now().UnixMilli()})
	}
	for i := range sessions {
		turn(1, i)
	}
	natstest.Eventually(t, 30*time.Second, func() bool { return len(sinkPins(master)) >= sessions }, "first pins")
	for i := range sessions {
		turn(2, i) // the response follows its request within 0-2 ms
	}
	want := map[string]string{}
	for i := range sessions {
		want[fmt.Sprintf("session:s-%d", i)] = actions.PinMessageID(fmt.Sprintf("t2-%d", i), false)
	}
	final := func() (map[string]sinkPin, int) {
		last := map[string]sinkPin{}
		for _, sp := range sinkPins(master) {
			last[sp.Payload.Slot] = sp
		}
		wrong := 0
		for slot, id := range want {
			if last[slot].MessageID != id {
				wrong++
			}
		}
		return last, wrong
	}
	natstest.Eventually(t, 60*time.Second, func() bool { _, wrong := final(); return wrong == 0 },
		"every session ends with its second pin applied")
	settled(t, ctx, js, "LLM_RESPONSES", "hintstream-responses")
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	for _, p := range procs {
		p.stop(t)
	}
	last, wrong := final()
	if wrong != 0 {
		t.Fatalf("%d of %d sessions end without their new pin (after the group settled)", wrong, sessions)
	}
	for slot, sp := range last {
		if sp.Payload.TTLMs == 0 || sp.Payload.Revision == 0 {
			t.Fatalf("%s ends with %+v: want a pin with a revision", slot, sp)
		}
	}
	master.stop(t)
	t.Logf("%d members: %d sessions, %d pin lines applied", members, sessions, len(sinkPins(master)))
}
