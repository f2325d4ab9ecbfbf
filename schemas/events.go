package schemas

//msgp:limit arrays:4194304 maps:4096

// RequestEvent is published by the frontend once per chat request on
// llm.requests.<model>. Only RequestID is required.
type RequestEvent struct {
	RequestID string            `msg:"request_id" json:"request_id"`
	SessionID string            `msg:"session_id" json:"session_id,omitempty"`
	Model     string            `msg:"model" json:"model,omitempty"`
	TokenIDs  []uint32          `msg:"token_ids" json:"token_ids,omitempty"`
	Headers   map[string]string `msg:"headers" json:"headers,omitempty"`
	LoraName  string            `msg:"lora_name" json:"lora_name,omitempty"`
	CacheSalt string            `msg:"cache_salt" json:"cache_salt,omitempty"`
	// ExtraKey is the request's extra_key as SGLang takes it (a caller's
	// own cache namespace beside cache_salt): SGLang seeds its storage page
	// hashes with both, so a pin of its pages must name them with both
	// (actions.Namespace). It does not change Dynamo's block hashes.
	ExtraKey     string `msg:"extra_key,omitempty" json:"extra_key,omitempty"`
	ReceivedAtMs int64  `msg:"received_at_ms" json:"received_at_ms,omitempty"`
	// NvExt is Dynamo's nvext as the frontend received it (agent.go).
	NvExt *NvExt `msg:"nvext,omitempty" json:"nvext,omitempty"`
	// SequenceHashes are the prompt's full blocks' sequence hashes, first
	// block first, at SequenceBlockSize tokens a block (kvevents.PromptHashes'
	// rule: XXH3 of each full block's tokens, chained), for a prompt known
	// by them rather than by its token ids (Dynamo's request trace and
	// routing events). A source whose last hash covers a partial block
	// drops it first.
	SequenceHashes []uint64 `msg:"sequence_hashes,omitempty" json:"sequence_hashes,omitempty"`
	// SequenceBlockSize is the tokens per block of SequenceHashes
	// (Dynamo's trace_block_size); required with them.
	SequenceBlockSize uint32 `msg:"sequence_block_size,omitempty" json:"sequence_block_size,omitempty"`
	// SequenceHashScheme says how SequenceHashes were seeded (HashScheme*);
	// "" is HashSchemeRouter.
	SequenceHashScheme string `msg:"sequence_hash_scheme,omitempty" json:"sequence_hash_scheme,omitempty"`
	// PromptTokens is the prompt's length in tokens (Dynamo's
	// input_length) when token ids are absent; 0: the full blocks'.
	PromptTokens uint32 `msg:"prompt_tokens,omitempty" json:"prompt_tokens,omitempty"`
	// WorkerID and DpRank are the worker the router already chose, when
	// the source knows it (Dynamo's AddRequest): the request is placed
	// there rather than by overlap. 0: not known.
	WorkerID uint64 `msg:"worker_id,omitempty" json:"worker_id,omitempty"`
	DpRank   uint32 `msg:"dp_rank,omitempty" json:"dp_rank,omitempty"`
}

// The ways a source may have seeded its sequence hashes. Only
// HashSchemeRouter's match the index's blocks for every request.
const (
	// HashSchemeRouter is Dynamo's router rule: the block seed of the
	// request's lora_name and cache_salt (kvevents.BlockSeed).
	HashSchemeRouter = "router"
	// HashSchemeUnsalted is the public rule with the default block seed
	// whatever the request's LoRA adapter or cache_salt: equal to the
	// router's only for a request with neither.
	HashSchemeUnsalted = "unsalted"
	// HashSchemeKeyed is Dynamo's keyed-xxh3-v1 tracking hash, seeded by
	// a provider key hintstream does not hold: it never matches the
	// index's blocks.
	HashSchemeKeyed = "keyed-xxh3-v1"
)

// ToolCall names one tool the model asked for.
type ToolCall struct {
	Name string `msg:"name" json:"name"`
}

// ResponseEvent is published by the frontend once per finished response on
// llm.responses.<model>. Only RequestID is required.
type ResponseEvent struct {
	RequestID      string     `msg:"request_id" json:"request_id"`
	SessionID      string     `msg:"session_id" json:"session_id,omitempty"`
	Model          string     `msg:"model" json:"model,omitempty"`
	WorkerID       uint64     `msg:"worker_id" json:"worker_id,omitempty"`
	DpRank         uint32     `msg:"dp_rank" json:"dp_rank,omitempty"`
	FinishReason   string     `msg:"finish_reason" json:"finish_reason,omitempty"`
	ToolCalls      []ToolCall `msg:"tool_calls" json:"tool_calls,omitempty"`
	OutputTokenIDs []uint32   `msg:"output_token_ids" json:"output_token_ids,omitempty"`
	CompletedAtMs  int64      `msg:"completed_at_ms" json:"completed_at_ms,omitempty"`
	// NvExt is the request's nvext, when the frontend repeats it (agent.go).
	NvExt *NvExt `msg:"nvext,omitempty" json:"nvext,omitempty"`
	// SequenceHashes are the prompt's full blocks' sequence hashes, first
	// block first, at SequenceBlockSize tokens a block (kvevents.PromptHashes'
	// rule: XXH3 of each full block's tokens, chained), so that a
	// tool-call pin names the pages the worker reported for them without
	// reading the request's token ids back (Dynamo's request_end). A
	// source whose last hash covers a partial block drops it first.
	SequenceHashes []uint64 `msg:"sequence_hashes,omitempty" json:"sequence_hashes,omitempty"`
	// SequenceBlockSize is the tokens per block of SequenceHashes
	// (Dynamo's trace_block_size); required with them.
	SequenceBlockSize uint32 `msg:"sequence_block_size,omitempty" json:"sequence_block_size,omitempty"`
	// SequenceHashScheme says how SequenceHashes were seeded (HashScheme*);
	// "" is HashSchemeRouter.
	SequenceHashScheme string `msg:"sequence_hash_scheme,omitempty" json:"sequence_hash_scheme,omitempty"`
	// PromptTokens is the prompt's length in tokens (Dynamo's
	// input_length) when token ids are absent; 0: the full blocks'.
	PromptTokens uint32 `msg:"prompt_tokens,omitempty" json:"prompt_tokens,omitempty"`
	// LoraName and CacheSalt are the request's, when the frontend repeats
	// them: with unsalted sequence hashes they say the hashes cannot be
	// the worker's.
	LoraName  string `msg:"lora_name,omitempty" json:"lora_name,omitempty"`
	CacheSalt string `msg:"cache_salt,omitempty" json:"cache_salt,omitempty"`
}
