package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

type sglangCase struct {
	Name       string               `json:"name"`
	Layout     schemas.ObjectLayout `json:"layout"`
	Tokens     []uint32             `json:"tokens"`
	ObjectKeys []string             `json:"object_keys"`
}

func sglangVector(t *testing.T, name string) sglangCase {
	t.Helper()
	b := testvectors.Read(t, "sglang_pages_and_keys.json")
	var f struct {
		Cases []sglangCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no vector case %q", name)
	return sglangCase{}
}

// pinsFor returns the kv.pin payloads the peer decoded for a trigger.
func pinsFor(ms []pypeer.Received, slot string) []map[string]any {
	var out []map[string]any
	for _, m := range ms {
		acts, _ := m.Envelope["actions"].([]any)
		for _, a := range acts {
			am := a.(map[string]any)
			if am["action_type"] != "kv.pin" {
				continue
			}
			if pl, _ := am["payload"].(map[string]any); pl["slot"] == slot {
				out = append(out, pl)
			}
		}
	}
	return out
}

// TestToolCallPinAcrossInstances: the request is consumed by one
// hintstream instance, which then stops; its tool-call response is
// consumed by another that never saw it. The pin must still name the
// prompt's pages: the Mooncake keys of the shared vector (computed by an
// independent implementation), in a kv.pin the peer decodes as msgspec
// would. The session's next request releases the slot (TTL 0).
func TestToolCallPinAcrossInstances(t *testing.T) {
	vec := sglangVector(t, "mha-tp2-page16") // 50 tokens, page 16: 3 full pages, 12 keys
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
	args := []string{"run", "--nats-url", srv.ClientURL(), "--pin-endpoint", eps[0], "--log-format", "json"}
	prompt, output := vec.Tokens[:40], vec.Tokens[40:]

	// Instance A takes the requests, then goes away.
	a := start(t, args...)
	a.waitLine(t, 30*time.Second, "hintstream running")
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "tool-1", SessionID: "s1", Model: model, TokenIDs: prompt})
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "sim-1", SessionID: "s2", Model: model, TokenIDs: prompt,
		Headers: map[string]string{"x-dynamo-experimental-sim-tool-call": "4000"}})
	settled(t, ctx, js, "LLM_REQUESTS", "hintstream-requests")
	a.stop(t)

	// Instance B takes the responses.
	b := start(t, args...)
	b.waitLine(t, 30*time.Second, "hintstream running")
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "tool-1", SessionID: "s1",
		Model: model, WorkerID: 1, FinishReason: "tool_calls", ToolCalls: []schemas.ToolCall{{Name: "search"}},
		OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli()})
	publishResponse(t, ctx, js, schemas.ResponseEvent{RequestID: "sim-1", SessionID: "s2",
		Model: model, WorkerID: 1, FinishReason: "stop", OutputTokenIDs: output, CompletedAtMs: time.Now().UnixMilli()})
	sink.WaitFor(t, 5*time.Second, func(ms []pypeer.Received) bool {
		return len(pinsFor(ms, "session:s1")) == 1 && len(pinsFor(ms, "session:s2")) == 1
	}, "pins for both sessions")
	for _, m := range sink.Messages() {
		if !m.OK {
			t.Fatalf("peer rejected a message: %s", m.Error)
		}
		if m.Endpoint != eps[0] {
			t.Fatalf("a hint went to %s, not the pin endpoint", m.Endpoint)
		}
	}
	// tool-1: default expected tool time 30s → TTL 30*1.5+5 = 50s; 48
	// page tokens → priority 1 + floor(99*log2(1+48/1024)/log2(129)) = 1.
	// sim-1: the header's 4s → TTL 4*1.5+5 = 11s.
	for slot, wantTTL := range map[string]int64{"session:s1": 50000, "session:s2": 11000} {
		pl := pinsFor(sink.Messages(), slot)[0]
		keys, _ := pl["keys"].([]any)
		if len(keys) != len(vec.ObjectKeys) {
			t.Fatalf("%s: %d keys, want the vector's %d", slot, len(keys), len(vec.ObjectKeys))
		}
		for i, k := range keys {
			if k != vec.ObjectKeys[i] {
				t.Fatalf("%s: key %d = %v, want %s", slot, i, k, vec.ObjectKeys[i])
			}
		}
		if got := num(t, pl["ttl_ms"]); got != wantTTL {
			t.Fatalf("%s: ttl_ms %d, want %d", slot, got, wantTTL)
		}
		if num(t, pl["priority"]) != 1 || num(t, pl["tokens"]) != 48 {
			t.Fatalf("%s: priority %v tokens %v, want 1 and 48", slot, pl["priority"], pl["tokens"])
		}
	}

	// The session's next turn releases its slot.
	publishRequest(t, ctx, js, schemas.RequestEvent{RequestID: "tool-2", SessionID: "s1", Model: model,
		TokenIDs: vec.Tokens, ReceivedAtMs: time.Now().UnixMilli()})
	sink.WaitFor(t, 5*time.Second, func(ms []pypeer.Received) bool { return len(pinsFor(ms, "session:s1")) == 2 },
		"release of session s1's slot")
	rel := pinsFor(sink.Messages(), "session:s1")[1]
	if num(t, rel["ttl_ms"]) != 0 {
		t.Fatalf("release ttl_ms %v, want 0", rel["ttl_ms"])
	}
	b.stop(t)
	c := finalCounters(t, b)
	// The gap between tool-1's tool call and s1's next turn is one
	// observation of "search".
	if c["hintstream_hints_pin_queued_total"] != 2 || c["hintstream_hints_release_queued_total"] != 1 || c["hintstream_tooltime_observed_total|search"] != 1 {
		t.Fatalf("counters: %v", c)
	}
}

// settled waits until a durable consumer has nothing pending or unacked.
func settled(t *testing.T, ctx context.Context, js jetstream.JetStream, stream, durable string) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, func() bool {
		c, err := js.Consumer(ctx, stream, durable)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0 && info.Delivered.Consumer > 0
	}, "%s consumer settled", durable)
}
