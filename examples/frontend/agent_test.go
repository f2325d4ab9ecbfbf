package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// TestFrontendCarriesNvExt: a chat request's nvext (Dynamo's agent
// context and hints) travels on both events, so the session is the
// agent's program; a hostile agent context is refused with 400 and
// publishes nothing.
func TestFrontendCarriesNvExt(t *testing.T) {
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
	post := func(body string) int {
		resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	nv := `"nvext":{"agent_context":{"workflow_type_id":"deep_research","workflow_id":"run-42","program_id":"run-42:researcher"},"agent_hints":{"priority":4}}`
	if code := post(`{"model":"Qwen/Qwen3-8B","messages":[{"role":"user","content":"please search"}],` + nv + `}`); code != 200 {
		t.Fatalf("status %d", code)
	}
	if code := post(`{"model":"Qwen/Qwen3-8B","messages":[],"nvext":{"agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":""}}}`); code != http.StatusBadRequest {
		t.Fatalf("empty program_id: status %d, want 400", code)
	}
	if code := post(`{"model":"Qwen/Qwen3-8B","messages":[],"nvext":{"agent_hints":{"priority":"high"}}}`); code != http.StatusBadRequest {
		t.Fatalf("string priority: status %d, want 400", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	def := streams.DefaultSet()
	reqs, resps := readAll(t, js, def.Requests.Name), readAll(t, js, def.Responses.Name)
	if len(reqs) != 1 || len(resps) != 1 {
		t.Fatalf("%d requests, %d responses, want 1 and 1", len(reqs), len(resps))
	}
	req, err := schemas.DecodeRequest(reqs[0].Data, reqs[0].Header.Get("Content-Type"))
	if err != nil || req.SessionID != "run-42/run-42:researcher" || req.NvExt.Hints().Priority != 4 {
		t.Fatalf("request %+v %v", req, err)
	}
	resp, err := schemas.DecodeResponse(resps[0].Data, resps[0].Header.Get("Content-Type"))
	if err != nil || resp.SessionID != req.SessionID || resp.NvExt.Context().ProgramID != "run-42:researcher" {
		t.Fatalf("response %+v %v", resp, err)
	}
}
