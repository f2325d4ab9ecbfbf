package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/schemas"
)

// chatRequest is the part of an OpenAI chat completion request this
// example reads.
type chatRequest struct {
	Model    string `json:"model"`
	User     string `json:"user"` // used as the session id
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	// Nvext is Dynamo's request extension; its agent_context and
	// agent_hints travel on both events (docs/agents.md).
	Nvext *schemas.NvExt `json:"nvext"`
}

// ToolCall is one tool the model asked for.
type ToolCall struct{ Name, Arguments string }

// Completion is what the model produced.
type Completion struct {
	Text         string
	TokenIDs     []uint32
	FinishReason string // "stop", "length" or "tool_calls"
	ToolCalls    []ToolCall
	WorkerID     uint64 // the worker that served it (the router knows)
	DpRank       uint32
}

// Model runs a prompt; a real frontend forwards to its router.
type Model interface {
	Complete(ctx context.Context, model string, prompt []uint32) (Completion, error)
}

// Tokenizer turns the templated prompt into token ids; a real frontend
// applies the model's chat template and tokenizer.
type Tokenizer func(model, prompt string) []uint32

// Handler is an OpenAI-style /v1/chat/completions handler that publishes
// the request and response events hintstream consumes.
type Handler struct {
	Pub      *client.Publisher
	Model    Model
	Tokenize Tokenizer
	Log      *slog.Logger
	seq      atomic.Uint64
}

// forwarded are the HTTP headers copied into the request event. The
// event's headers map is lower-case.
var forwarded = []string{schemas.HeaderWakeup, schemas.HeaderSimToolCall}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var req chatRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<20)).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, "want an OpenAI chat completion request with a model", http.StatusBadRequest)
		return
	}
	if reason := schemas.CheckAgentContext(req.Nvext.Context(), 0); reason != "" {
		http.Error(w, "nvext: "+reason, http.StatusBadRequest) // as Dynamo's frontend refuses it
		return
	}
	id := fmt.Sprintf("chatcmpl-%d-%d", time.Now().UnixNano(), h.seq.Add(1))
	var prompt strings.Builder
	for _, m := range req.Messages {
		fmt.Fprintf(&prompt, "<|%s|>%s\n", m.Role, m.Content)
	}
	ev := &schemas.RequestEvent{RequestID: id, SessionID: req.User, Model: req.Model,
		TokenIDs: h.Tokenize(req.Model, prompt.String()), ReceivedAtMs: time.Now().UnixMilli(), NvExt: req.Nvext}
	for _, name := range forwarded {
		if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok && len(v) > 0 {
			if ev.Headers == nil {
				ev.Headers = map[string]string{}
			}
			ev.Headers[name] = v[0]
		}
	}
	// Publishing is asynchronous and bounded: it never holds the answer
	// up, and a full window waits only for a place (or the client going).
	if err := h.Pub.PublishRequest(r.Context(), ev); err != nil {
		h.Log.Warn("request event not published", "request_id", id, "err", err)
	}
	if client.IsWakeup(ev.Headers) {
		// A wake-up is not a turn: the user opened the thread. Answer at
		// once without running the model; hintstream prefetches the
		// prompt's KV on the worker the real turn will be routed to.
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "model": req.Model, "choices": []any{}})
		return
	}
	out, err := h.Model.Complete(r.Context(), req.Model, ev.TokenIDs)
	if err != nil {
		http.Error(w, "model: "+err.Error(), http.StatusBadGateway)
		return
	}
	resp := &schemas.ResponseEvent{RequestID: id, SessionID: req.User, Model: req.Model, WorkerID: out.WorkerID,
		DpRank: out.DpRank, FinishReason: out.FinishReason, OutputTokenIDs: out.TokenIDs,
		CompletedAtMs: time.Now().UnixMilli(), NvExt: req.Nvext}
	for _, tc := range out.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, schemas.ToolCall{Name: tc.Name})
	}
	if err := h.Pub.PublishResponse(r.Context(), resp); err != nil {
		h.Log.Warn("response event not published", "request_id", id, "err", err)
	}
	msg := map[string]any{"role": "assistant", "content": out.Text}
	if len(out.ToolCalls) > 0 {
		var calls []any
		for i, tc := range out.ToolCalls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}})
		}
		msg["tool_calls"] = calls
	}
	writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": out.FinishReason}}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
