package schemas

//msgp:limit arrays:4194304 maps:4096

// RequestEvent is published by the frontend once per chat request on
// llm.requests.<model>. Only RequestID is required.
type RequestEvent struct {
	RequestID    string            `msg:"request_id" json:"request_id"`
	SessionID    string            `msg:"session_id" json:"session_id,omitempty"`
	Model        string            `msg:"model" json:"model,omitempty"`
	TokenIDs     []uint32          `msg:"token_ids" json:"token_ids,omitempty"`
	Headers      map[string]string `msg:"headers" json:"headers,omitempty"`
	LoraName     string            `msg:"lora_name" json:"lora_name,omitempty"`
	CacheSalt    string            `msg:"cache_salt" json:"cache_salt,omitempty"`
	ReceivedAtMs int64             `msg:"received_at_ms" json:"received_at_ms,omitempty"`
	// NvExt is Dynamo's nvext as the frontend received it (agent.go).
	NvExt *NvExt `msg:"nvext,omitempty" json:"nvext,omitempty"`
}

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
}
