package standin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Dynamo is a Go stand-in (net/http/httptest on 127.0.0.1) for the
// Dynamo frontend's OpenAI endpoints, POST /v1/completions and
// POST /v1/chat/completions, written from ai-dynamo/dynamo's source:
//
//   - routing headers as apply_header_routing_overrides reads them
//     (lib/llm/src/protocols/common/extensions.rs at
//     004e2c53ce22758d9ad20652eda464c76367eab3):
//     x-dynamo-worker-instance-id (u64) with its alias
//     x-worker-instance-id, x-dynamo-dp-rank (u32) with its aliases
//     x-dp-rank and x-data-parallel-rank; the prefixed name wins, a value
//     that does not parse is ignored (the frontend then routes by itself);
//   - a named instance the frontend does not know fails the request as
//     PushRouter::direct does ("instance_id=N not found for endpoint",
//     lib/runtime/src/pipeline/network/egress/push_router.rs, held by the
//     index at a0550adcf46f6cf860dcfd1721e1d4a86d20fe8d): the
//     stand-in answers 500, the status of an engine error; a real run
//     must confirm the status;
//   - top-level members outside the OpenAI request and Dynamo's passthrough
//     list are refused with 400 "Unsupported parameter(s)"
//     (validate_no_unsupported_fields, lib/llm/src/protocols/openai/
//     validate.rs at b52579aefae52b0a0cfedb4200bf50aea7adcc02; the
//     passthrough list of later versions: cache_salt, stop_token_ids,
//     detokenize, allowed_token_ids, bad_words_token_ids,
//     logprob_token_ids); nvext is deny_unknown_fields (NvExt in
//     extensions.rs at 004e2c53);
//   - a member of the wrong type is a deserialization error, answered 422
//     as axum's Json extractor answers one; model may not be empty,
//     max_tokens not 0, a prompt array not empty, messages not empty
//     (validate.rs at b52579ae): 400; a model the frontend does not serve
//     is 404.
//
// It records every request it accepted, with the routing it resolved.
type Dynamo struct {
	*httptest.Server
	ledger[DynamoCall]
	models  []string
	workers map[uint64]uint32 // instance id → data-parallel size
}

// DynamoCall is one request the Dynamo stand-in accepted.
type DynamoCall struct {
	Path     string
	Header   http.Header
	Body     map[string]any
	WorkerID uint64 // resolved from the headers; 0: none named
	DpRank   *uint32
}

// Openai request members the frontend reads (dynamo_async_openai's
// CreateCompletionRequest / CreateChatCompletionRequest and Dynamo's
// common extensions) and the passthrough members later versions accept.
var (
	dynamoCommonFields = []string{"model", "max_tokens", "temperature", "top_p", "n", "stream", "stream_options",
		"stop", "presence_penalty", "frequency_penalty", "logit_bias", "user", "seed", "logprobs", "nvext",
		"ignore_eos", "min_tokens", "top_k", "min_p", "repetition_penalty", "include_stop_str_in_output",
		"cache_salt", "stop_token_ids", "detokenize", "allowed_token_ids", "bad_words_token_ids", "logprob_token_ids"}
	dynamoCompletionFields = []string{"prompt", "suffix", "echo", "best_of", "prompt_embeds"}
	dynamoChatFields       = []string{"messages", "max_completion_tokens", "tools", "tool_choice", "top_logprobs",
		"response_format", "parallel_tool_calls", "reasoning_effort", "service_tier", "store", "metadata",
		"modalities", "chat_template_args", "chat_template_kwargs", "functions", "function_call"}
	dynamoNvextFields = []string{"greed_sampling", "use_raw_prompt", "annotations", "backend_instance_id",
		"token_data", "max_thinking_tokens", "cache_salt", "extra_fields", "metadata_upload", "prefill_worker_id",
		"decode_worker_id", "dp_rank", "prefill_dp_rank", "agent_hints", "request_timestamp_ms",
		"routing_constraints", "router"}
	dynamoAgentHintFields = []string{"priority", "strict_priority", "osl", "speculative_prefill", "latency_sensitivity"}
)

// NewDynamo starts a frontend stand-in serving models, whose workers are
// the instance ids of workers (each with its data-parallel size).
func NewDynamo(models []string, workers map[uint64]uint32) *Dynamo {
	d := &Dynamo{models: models, workers: workers}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { d.serve(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { d.serve(w, r, true) })
	d.Server = httptest.NewServer(mux)
	return d
}

func (d *Dynamo) serve(w http.ResponseWriter, r *http.Request, chat bool) {
	c, status, err := d.check(r, chat)
	if err != nil {
		d.reject(status, err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": err.Error(), "code": status}})
		return
	}
	d.accept(c)
	w.Header().Set("Content-Type", "application/json")
	if chat {
		fmt.Fprintf(w, `{"id":"chatcmpl-standin","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"x"},"finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":1,"total_tokens":1}}`, c.Body["model"])
		return
	}
	fmt.Fprintf(w, `{"id":"cmpl-standin","object":"text_completion","model":%q,"choices":[{"index":0,"text":"x","finish_reason":"length"}],"usage":{"prompt_tokens":0,"completion_tokens":1,"total_tokens":1}}`, c.Body["model"])
}

// check validates one request as the frontend would: the call it
// accepted, or the status and error it refuses it with.
func (d *Dynamo) check(r *http.Request, chat bool) (DynamoCall, int, error) {
	c := DynamoCall{Path: r.URL.Path, Header: r.Header.Clone()}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return c, http.StatusBadRequest, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&c.Body); err != nil || c.Body == nil {
		return c, http.StatusBadRequest, fmt.Errorf("Failed to parse the request body as JSON: %v", err)
	}
	known := slices.Concat(dynamoCommonFields, dynamoCompletionFields)
	if chat {
		known = slices.Concat(dynamoCommonFields, dynamoChatFields)
	}
	if unknown := unknownKeys(c.Body, known); len(unknown) > 0 {
		return c, http.StatusBadRequest, fmt.Errorf("Unsupported parameter(s): `%s`", strings.Join(unknown, "`, `"))
	}
	model, ok := c.Body["model"].(string)
	if !ok {
		return c, http.StatusUnprocessableEntity, fmt.Errorf("model: invalid type: expected a string")
	}
	if strings.TrimSpace(model) == "" {
		return c, http.StatusBadRequest, fmt.Errorf("Model cannot be empty")
	}
	if v, ok := c.Body["max_tokens"]; ok && v != nil {
		n, ok := jsonUint(v, 32)
		if !ok {
			return c, http.StatusUnprocessableEntity, fmt.Errorf("max_tokens: invalid type: expected u32")
		}
		if n == 0 {
			return c, http.StatusBadRequest, fmt.Errorf("Max tokens must be greater than 0, got 0")
		}
	}
	if v, ok := c.Body["stream"]; ok && v != nil {
		if _, ok := v.(bool); !ok {
			return c, http.StatusUnprocessableEntity, fmt.Errorf("stream: invalid type: expected a boolean")
		}
	}
	if v, ok := c.Body["cache_salt"]; ok && v != nil {
		if _, ok := v.(string); !ok {
			return c, http.StatusBadRequest, fmt.Errorf("`cache_salt` must be a string")
		}
	}
	if chat {
		msgs, ok := c.Body["messages"].([]any)
		if !ok {
			return c, http.StatusUnprocessableEntity, fmt.Errorf("messages: invalid type: expected a sequence")
		}
		if len(msgs) == 0 {
			return c, http.StatusBadRequest, fmt.Errorf("Messages array cannot be empty")
		}
		for i, m := range msgs {
			mm, ok := m.(map[string]any)
			if _, role := mm["role"].(string); !ok || !role {
				return c, http.StatusUnprocessableEntity, fmt.Errorf("messages[%d]: missing field `role`", i)
			}
		}
	} else {
		prompt, ok := c.Body["prompt"].([]any)
		if !ok {
			if _, text := c.Body["prompt"].(string); !text {
				return c, http.StatusUnprocessableEntity, fmt.Errorf("prompt: data did not match any variant of untagged enum Prompt")
			}
		} else {
			if len(prompt) == 0 {
				return c, http.StatusBadRequest, fmt.Errorf("Prompt integer array cannot be empty")
			}
			for _, t := range prompt {
				if _, ok := jsonUint(t, 32); !ok {
					return c, http.StatusUnprocessableEntity, fmt.Errorf("prompt: data did not match any variant of untagged enum Prompt")
				}
			}
		}
	}
	if v, ok := c.Body["nvext"]; ok && v != nil {
		nv, ok := v.(map[string]any)
		if !ok {
			return c, http.StatusUnprocessableEntity, fmt.Errorf("nvext: invalid type: expected struct NvExt")
		}
		if unknown := unknownKeys(nv, dynamoNvextFields); len(unknown) > 0 {
			return c, http.StatusUnprocessableEntity, fmt.Errorf("nvext: unknown field `%s`", unknown[0])
		}
		if s, ok := nv["cache_salt"]; ok && s != nil {
			if _, ok := s.(string); !ok {
				return c, http.StatusUnprocessableEntity, fmt.Errorf("nvext.cache_salt: invalid type: expected a string")
			}
		}
		if h, ok := nv["agent_hints"]; ok && h != nil {
			hm, ok := h.(map[string]any)
			if !ok {
				return c, http.StatusUnprocessableEntity, fmt.Errorf("nvext.agent_hints: invalid type")
			}
			if unknown := unknownKeys(hm, dynamoAgentHintFields); len(unknown) > 0 {
				return c, http.StatusUnprocessableEntity, fmt.Errorf("nvext.agent_hints: unknown field `%s`", unknown[0])
			}
		}
	}
	if !slices.Contains(d.models, model) {
		return c, http.StatusNotFound, fmt.Errorf("Model not found: %s", model)
	}
	if id, ok := headerUint(r.Header, 64, "x-dynamo-worker-instance-id", "x-worker-instance-id"); ok {
		c.WorkerID = id
		size, known := d.workers[id]
		if !known {
			return c, http.StatusInternalServerError, fmt.Errorf("instance_id=%d not found for endpoint dynamo/backend/generate", id)
		}
		if rank, ok := headerUint(r.Header, 32, "x-dynamo-dp-rank", "x-dp-rank", "x-data-parallel-rank"); ok {
			rk := uint32(rank)
			c.DpRank = &rk
			if rk >= size {
				return c, http.StatusInternalServerError, fmt.Errorf("dp_rank %d out of range for instance %d (%d ranks)", rk, id, size)
			}
		}
	}
	return c, 0, nil
}

// headerUint is the first of names whose value parses as an unsigned
// integer of bits, as the frontend reads a routing header.
func headerUint(h http.Header, bits int, names ...string) (uint64, bool) {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			if u, err := strconv.ParseUint(v, 10, bits); err == nil {
				return u, true
			}
		}
	}
	return 0, false
}

// jsonUint is v as serde reads an unsigned integer of bits: a JSON
// number without fraction or exponent, in range.
func jsonUint(v any, bits int) (uint64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	u, err := strconv.ParseUint(n.String(), 10, bits)
	return u, err == nil
}

func unknownKeys(m map[string]any, known []string) []string {
	var out []string
	for k := range m {
		if !slices.Contains(known, k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
