package adapter

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Engines the adapter speaks to.
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"
)

// call is one request to a target: where to POST, the JSON body, and
// the headers beside Content-Type (Dynamo's routing headers).
type call struct {
	target string // for logs: the engine's name, TargetDynamo or TargetLMCache
	url    string
	body   []byte
	header http.Header
}

// warmUp is what a call is built from: one prefetch or retain.
type warmUp struct {
	tokens    []uint32
	model     string
	claim     string  // vLLM claim_id
	revision  int64   // vLLM revision of claim
	value     int64   // vLLM eviction priority of the claim's blocks
	ttl       float64 // vLLM ttl_seconds, > 0
	msgID     string  // the hint's message id: the kv_hints envelope's
	cacheSalt string  // the request's cache namespace; "" none
	workerID  uint64  // the worker chosen (Dynamo target: the instance routed to); 0 none
	dpRank    uint32  // its data-parallel rank
	// body, when set, is the conversation's chat request (Dynamo's
	// request_payload): the Dynamo target then warms with it instead of
	// the token ids.
	body json.RawMessage
}

// sglangGenerate is the body of SGLang's native POST /generate, the
// dataclass GenerateReqInput (python/sglang/srt/managers/io_struct.py at
// 001067fffe33427bee0ed2f007fb7551a1d76b44; route in
// python/sglang/srt/entrypoints/http_server.py at
// 9c0549b727fe222444495cea6b369697534d60f0):
//   - input_ids: Optional[Union[List[List[int]], List[int]]], the prompt
//     as token ids (one of text, input_ids, input_embeds is required);
//   - sampling_params: Optional[Dict[str, Any]], expanded into
//     SamplingParams(**sampling_params), whose max_new_tokens bounds the
//     output (python/sglang/srt/sampling/sampling_params.py, stored at
//     0bebedd800a35ae29a9adeab6617605970d724bd; an unknown key there is a
//     TypeError, hence one key only);
//   - priority: Optional[int], honoured under
//     --enable-priority-scheduling (sent only when configured: see
//     Config.EnginePriority);
//   - cache_salt: Optional[Union[List[str], str]], "Cache namespace used
//     to isolate otherwise-identical prefixes" (GenerateReqInput at
//     001067ff): a salted prompt's pages are keyed by it (SGLang PR
//     #38577), so a warm-up without it would warm the unsalted prefix the
//     turn never reads. Sent only for a salted hint.
type sglangGenerate struct {
	InputIDs       []uint32       `json:"input_ids"`
	SamplingParams sglangSampling `json:"sampling_params"`
	Priority       *int64         `json:"priority,omitempty"`
	CacheSalt      string         `json:"cache_salt,omitempty"`
}

type sglangSampling struct {
	MaxNewTokens int `json:"max_new_tokens"`
}

// vllmCompletion is the body of vLLM's POST /v1/completions,
// CompletionRequest (vllm/entrypoints/openai/completion/protocol.py at
// d5dba2d7b0ab9b98096560c69db7126b54b14d79; the same fields at
// 002032ee2b18e1f7bd924ec47b62504ba3866063):
//   - model: str | None, the served model name;
//   - prompt: list[int] | list[list[int]] | str | list[str] | None: token
//     ids, so the engine does not tokenize;
//   - max_tokens: int | None (default 16): 1, one scheduler step;
//   - priority: int (default 0; lower is handled earlier, and any value
//     other than 0 is an error unless the server runs
//     --scheduling-policy priority): sent only when configured;
//   - cache_salt: str | None, "the prefix cache will be salted with the
//     provided string": a salted prompt's blocks hash with it, so a
//     warm-up must carry the turn's salt or it warms blocks the turn never
//     hits. Sent only for a salted hint;
//   - kv_hints: the KvHintsEnvelope of vllm/v1/kv_hints/protocol.py (at
//     01a37bc09a949a6a516afd924ad10e60c56f35f3), attached "using the
//     existing kv_hints field" (vllm/v1/kv_hints/README.md at
//     7966f717dd4eb09461dd97102db1352c924bbf50). The CompletionRequest
//     at d5dba2d7 (and at 002032ee) has no such field, and its base model
//     is extra="allow" (vllm/entrypoints/openai/engine/protocol.py at
//     040a2cc2a6295ea9c313d86526ff90a103eacb3e and at
//     d7e52523a55cfd60207c99d9f3b7ed527d2115b7), so an engine without it
//     logs the field as ignored and still warms the prefix.
type vllmCompletion struct {
	Model     string       `json:"model"`
	Prompt    []uint32     `json:"prompt"`
	MaxTokens int          `json:"max_tokens"`
	Priority  *int64       `json:"priority,omitempty"`
	CacheSalt string       `json:"cache_salt,omitempty"`
	KvHints   *vllmKvHints `json:"kv_hints,omitempty"`
}

type vllmKvHints struct {
	ProtocolVersion string       `json:"protocol_version"`
	MessageID       string       `json:"message_id"`
	Actions         []vllmAction `json:"actions"`
}

type vllmAction struct {
	ActionID      string          `json:"action_id"`
	ActionType    string          `json:"action_type"`
	ActionVersion string          `json:"action_version"`
	Payload       vllmSetPriority `json:"payload"`
}

// vllmSetPriority is vllm.set_priority@1.0, the msgspec struct SetPriority
// (vllm/v1/kv_hints/actions.py at ffeb400564cafb694280912a1d54a9a676295fb1,
// forbid_unknown_fields, converted with strict=True by dispatch.py at
// e99ac19d1690619300397266a3724d9693e281dc): target "request_cached",
// location "local_g1", claim_id of 1..256 characters, revision >= 0,
// value an int (blocks without a claim have 0; lower is evicted first),
// ttl_seconds a finite positive float when value is set. It is applied at
// the request's successful completion, to the request's cached G1 blocks.
type vllmSetPriority struct {
	Target     string  `json:"target"`
	Location   string  `json:"location"`
	ClaimID    string  `json:"claim_id"`
	Revision   int64   `json:"revision"`
	Value      int64   `json:"value"`
	TTLSeconds seconds `json:"ttl_seconds"`
}

// seconds encodes with a decimal point ("60.000"), so the JSON value is a
// float on the Python side whatever its size: msgspec's float field is
// then met without relying on int-to-float coercion.
type seconds float64

func (s seconds) MarshalJSON() ([]byte, error) {
	return strconv.AppendFloat(nil, float64(s), 'f', 3, 64), nil
}

// buildCall is the request to engine (at base, its HTTP base URL) for w.
func buildCall(engine, base string, w warmUp, priority *int64) (call, error) {
	switch engine {
	case EngineSGLang:
		b, err := json.Marshal(sglangGenerate{InputIDs: w.tokens, SamplingParams: sglangSampling{MaxNewTokens: 1},
			Priority: priority, CacheSalt: w.cacheSalt})
		return call{target: engine, url: base + "/generate", body: b}, err
	case EngineVLLM:
		req := vllmCompletion{Model: w.model, Prompt: w.tokens, MaxTokens: 1, Priority: priority, CacheSalt: w.cacheSalt}
		if w.claim != "" {
			req.KvHints = &vllmKvHints{ProtocolVersion: "0.1", MessageID: w.msgID, Actions: []vllmAction{{
				ActionID: w.msgID + "/set_priority", ActionType: "vllm.set_priority", ActionVersion: "1.0",
				Payload: vllmSetPriority{Target: "request_cached", Location: "local_g1", ClaimID: w.claim,
					Revision: w.revision, Value: w.value, TTLSeconds: seconds(w.ttl)},
			}}}
		}
		b, err := json.Marshal(req)
		return call{target: engine, url: base + "/v1/completions", body: b}, err
	}
	return call{}, fmt.Errorf("%w: engine %q, want %s or %s", ErrInvalidOption, engine, EngineSGLang, EngineVLLM)
}

// claimID namespaces a session's claim as vLLM asks producers to:
// "hintstream/<session>", cut to vLLM's 256-character bound.
func claimID(session, requestID string) string {
	id := "hintstream/" + session
	if session == "" {
		id = "hintstream/request:" + requestID
	}
	if len(id) > 256 {
		id = strings.ToValidUTF8(id[:256], "")
	}
	return id
}
