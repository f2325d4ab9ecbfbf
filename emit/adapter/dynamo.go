package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Dynamo's frontend turns these request headers into the request's
// routing: apply_header_routing_overrides in
// lib/llm/src/protocols/common/extensions.rs (ai-dynamo/dynamo at
// 004e2c53ce22758d9ad20652eda464c76367eab3, the same at
// acdd24972642dd86a56495d74711b67d64ab2ab9) maps
// x-dynamo-worker-instance-id (u64) to nvext.backend_instance_id and
// decode_worker_id, and x-dynamo-dp-rank (u32) to nvext.dp_rank; a header
// wins over the body's nvext. The unprefixed names are the aliases it
// still reads ("compatibility aliases for the original unprefixed
// names"), and the only names older frontends know: at
// 9a541b0c1511b5b5a6ec6978ee948a8d5e862527 the function lived in
// lib/llm/src/protocols/openai/nvext.rs and read x-worker-instance-id
// alone. Both names carry the same value, so every release routes the
// warm-up where the hint says.
const (
	dynamoWorkerHeader      = "x-dynamo-worker-instance-id"
	dynamoDpRankHeader      = "x-dynamo-dp-rank"
	dynamoWorkerHeaderAlias = "x-worker-instance-id"
	dynamoDpRankHeaderAlias = "x-dp-rank"
)

// dynamoCompletion is the warm-up Dynamo's own speculative prefill makes,
// from outside the frontend. Inside it (prefill_task in
// lib/llm/src/preprocessor/speculative_prefill.rs at
// 141cf6d36ed99835c65cf5e2011cb64f55028b83) the frontend builds a
// PreprocessedRequest of the next turn's token ids with
// stop_conditions.max_tokens 1, sends it down its pipeline (router
// included) and drains the answer, bounded by 60 s; an external caller
// reaches the same pipeline through POST /v1/completions with the token
// ids as the prompt: the preprocessor takes PromptInput::Tokens as they
// are, without template or tokenizer (gather_tokens in
// lib/llm/src/preprocessor.rs at d657591513d9905960b8741e65f5d4bea3a13bc2),
// and validate_prompt (lib/llm/src/protocols/openai/validate.rs at
// b52579aefae52b0a0cfedb4200bf50aea7adcc02) accepts a non-empty integer
// array. The frontend refuses a top-level field it does not know
// ("Unsupported parameter(s)", validate_no_unsupported_fields), so only
// OpenAI fields are sent:
//   - model: the served model (frontends route by it);
//   - prompt: the hint's token ids;
//   - max_tokens: 1 (validate_max_tokens refuses 0);
//   - stream: false, so the answer is one JSON body, read and drained as
//     every answer is (post);
//   - nvext.cache_salt, only for a salted hint: the canonical salt
//     (request_cache_salt in extensions.rs at 004e2c53, which also takes
//     it from the x-tenant-id header); a frontend before nvext had it
//     ignores the member (NvExt at 9a541b0c does not deny unknown fields).
type dynamoCompletion struct {
	Model     string       `json:"model"`
	Prompt    []uint32     `json:"prompt"`
	MaxTokens int          `json:"max_tokens"`
	Stream    bool         `json:"stream"`
	Nvext     *dynamoNvext `json:"nvext,omitempty"`
}

type dynamoNvext struct {
	CacheSalt string `json:"cache_salt,omitempty"`
}

// dynamoCall is the warm-up for w through the frontend at base: the token
// ids to /v1/completions, or, when w carries the conversation's chat
// request, that request to /v1/chat/completions cut to one token.
func dynamoCall(base string, w warmUp) (call, error) {
	c := call{target: TargetDynamo, header: http.Header{}}
	if w.workerID != 0 {
		id := strconv.FormatUint(w.workerID, 10)
		rank := strconv.FormatUint(uint64(w.dpRank), 10)
		c.header.Set(dynamoWorkerHeader, id)
		c.header.Set(dynamoWorkerHeaderAlias, id)
		c.header.Set(dynamoDpRankHeader, rank)
		c.header.Set(dynamoDpRankHeaderAlias, rank)
	}
	var err error
	if len(w.body) > 0 {
		c.url = base + "/v1/chat/completions"
		c.body, err = chatWarmUp(w.body, w.cacheSalt)
		return c, err
	}
	req := dynamoCompletion{Model: w.model, Prompt: w.tokens, MaxTokens: 1}
	if w.cacheSalt != "" {
		req.Nvext = &dynamoNvext{CacheSalt: w.cacheSalt}
	}
	c.url = base + "/v1/completions"
	c.body, err = json.Marshal(req)
	return c, err
}

// errNotChat: a request body that is no chat completions request.
var errNotChat = errors.New("adapter: request body is not a chat completions request")

// chatWarmUp rewrites a conversation's chat completions request into its
// one-token warm-up, keeping every member that shapes the prompt
// (messages, tools, chat template arguments, nvext) as the frontend
// received it, so the template renders the same prefix:
//   - max_tokens 1, and no max_completion_tokens (it would bound the
//     output instead);
//   - stream false and no stream_options (the frontend refuses
//     stream_options without stream);
//   - no n: one choice;
//   - nvext.agent_hints.speculative_prefill removed, so the warm-up does
//     not ask for a warm-up of its own;
//   - nvext.cache_salt set to the hint's salt when the body has none.
func chatWarmUp(body json.RawMessage, salt string) ([]byte, error) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("%w: %w", errNotChat, err)
	}
	if msgs, ok := req["messages"]; !ok || !bytes.HasPrefix(bytes.TrimSpace(msgs), []byte("[")) {
		return nil, fmt.Errorf("%w: no messages array", errNotChat)
	}
	req["max_tokens"] = json.RawMessage("1")
	req["stream"] = json.RawMessage("false")
	delete(req, "max_completion_tokens")
	delete(req, "stream_options")
	delete(req, "n")
	nvext := map[string]json.RawMessage{}
	if raw, ok := req["nvext"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &nvext); err != nil {
			return nil, fmt.Errorf("%w: nvext: %w", errNotChat, err)
		}
	}
	if raw, ok := nvext["agent_hints"]; ok && string(raw) != "null" {
		var hints map[string]json.RawMessage
		if err := json.Unmarshal(raw, &hints); err != nil {
			return nil, fmt.Errorf("%w: nvext.agent_hints: %w", errNotChat, err)
		}
		delete(hints, "speculative_prefill")
		b, _ := json.Marshal(hints) // a map of raw messages always marshals
		nvext["agent_hints"] = b
	}
	if _, ok := nvext["cache_salt"]; !ok && salt != "" {
		b, _ := json.Marshal(salt)
		nvext["cache_salt"] = b
	}
	if len(nvext) > 0 {
		b, _ := json.Marshal(nvext)
		req["nvext"] = b
	}
	return json.Marshal(req)
}
