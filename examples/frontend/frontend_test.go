package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// TestFrontendPublishesBothEvents runs the example against a real NATS
// server: a wake-up is answered at once with no completion and published
// with its header; a turn whose answer is a tool call publishes the
// request and a tool_calls response.
func TestFrontendPublishesBothEvents(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	addrc := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, srv.ClientURL(), "127.0.0.1:0", func(a string) { addrc <- a }) }()
	addr := <-addrc

	post := func(body string, wake bool) map[string]any {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		if wake {
			req.Header.Set(schemas.HeaderWakeup, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		if resp.StatusCode != 200 || json.NewDecoder(resp.Body).Decode(&out) != nil {
			t.Fatalf("status %s", resp.Status)
		}
		return out
	}
	wake := post(`{"model":"Qwen/Qwen3-8B","user":"s-1","messages":[{"role":"user","content":"hello"}]}`, true)
	if ch, _ := wake["choices"].([]any); len(ch) != 0 {
		t.Fatalf("a wake-up ran the model: %v", wake)
	}
	turn := post(`{"model":"Qwen/Qwen3-8B","user":"s-1","messages":[{"role":"user","content":"please search"}]}`, false)
	ch := turn["choices"].([]any)[0].(map[string]any)
	if ch["finish_reason"] != "tool_calls" {
		t.Fatalf("turn answered %v", turn)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	def := streams.DefaultSet()
	reqs := readAll(t, js, def.Requests.Name)
	if len(reqs) != 2 {
		t.Fatalf("%d request events, want 2", len(reqs))
	}
	w, err := schemas.DecodeRequest(reqs[0].Data, reqs[0].Header.Get("Content-Type"))
	if err != nil || w.Headers[schemas.HeaderWakeup] != "1" || w.SessionID != "s-1" || len(w.TokenIDs) == 0 {
		t.Fatalf("wake-up event %+v %v", w, err)
	}
	if id := reqs[0].Header.Get(jetstream.MsgIDHeader); id != "wake:"+w.RequestID {
		t.Fatalf("Nats-Msg-Id %q", id)
	}
	resps := readAll(t, js, def.Responses.Name)
	if len(resps) != 1 {
		t.Fatalf("%d response events, want 1 (none for the wake-up)", len(resps))
	}
	r, err := schemas.DecodeResponse(resps[0].Data, resps[0].Header.Get("Content-Type"))
	if err != nil || r.FinishReason != "tool_calls" || len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "web_search" || r.WorkerID != 1 {
		t.Fatalf("response event %+v %v", r, err)
	}
}

func readAll(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	return natstest.Messages(t, js, stream)
}
