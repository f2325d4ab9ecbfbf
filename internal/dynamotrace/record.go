// Package dynamotrace is a stand-in for an unmodified Dynamo frontend's
// request trace, for tests: it writes RequestTraceRecords byte for byte
// as serde_json writes them, publishes them as the nats sink does and
// writes them as the file sink does.
//
// It is written from Dynamo's Rust source, not from hintstream's decoder
// (ingest/requesttrace), so that a test decoding its output proves the
// decoder reads what Dynamo writes:
//
//   - the structs and their serde attributes: ai-dynamo/dynamo
//     lib/llm/src/request_trace/types.rs@0366e63a, AgentContext and
//     InputTrigger in lib/llm/src/protocols/common/extensions.rs@004e2c53;
//   - field order is declaration order, as serde derives it; an Option
//     with skip_serializing_if = "Option::is_none" is omitted when None,
//     the two Vecs with Vec::is_empty when empty; input_sequence_hashes
//     (no skip) is written even when empty;
//   - f64 as serde_json formats it (ryu: 12.0, 0.5, 1e16, 1.5e-7), u64
//     as a plain integer;
//   - strings escaped as serde_json escapes them: only '"', '\\' and
//     control characters (\b \f \n \r \t, others \u00xx), never '<', '>',
//     '&' or U+2028/U+2029;
//   - the nats sink publishes serde_json::to_vec(record) with JetStream,
//     no headers (sink.rs@0366e63a NatsRequestTraceSink);
//   - the file sink writes {"timestamp": ms since the sink started,
//     "event": record} and a newline per record (lib/llm/src/recorder.rs
//     @03b41453 RecordEntry), gzip members when compressed
//     (telemetry/jsonl_gz.rs@161ff57c GzipEntry, write_gzip_member).
//
// The sequence hashes a stand-in request carries are computed as
// Dynamo's replay.rs@0366e63a input_sequence_hashes does (Hashes).
package dynamotrace

// Record is RequestTraceRecord.
type Record struct {
	Schema          string        `json:"schema"`
	EventType       string        `json:"event_type"`
	EventTimeUnixMs uint64        `json:"event_time_unix_ms"`
	EventSource     *string       `json:"event_source,omitempty"`
	AgentContext    *AgentContext `json:"agent_context,omitempty"`
	Request         *Metrics      `json:"request,omitempty"`
	Tool            *ToolEvent    `json:"tool,omitempty"`
	Payload         *Payload      `json:"payload,omitempty"`
}

// AgentContext is Dynamo's AgentContext.
type AgentContext struct {
	SessionID       string           `json:"session_id"`
	ParentSessionID *string          `json:"parent_session_id,omitempty"`
	SessionFinal    *bool            `json:"session_final,omitempty"`
	Compaction      *AgentCompaction `json:"compaction,omitempty"`
	KVHints         *KVHints         `json:"kv_hints,omitempty"`
	InputTrigger    *string          `json:"input_trigger,omitempty"`
}

// AgentCompaction is Dynamo's AgentCompaction.
type AgentCompaction struct {
	Trigger        *string `json:"trigger,omitempty"`
	Reason         *string `json:"reason,omitempty"`
	Implementation *string `json:"implementation,omitempty"`
	Phase          *string `json:"phase,omitempty"`
	Strategy       *string `json:"strategy,omitempty"`
}

// KVHints is Dynamo's KvHints.
type KVHints struct {
	EvictSession bool `json:"evict_session"`
}

// Metrics is RequestTraceMetrics.
type Metrics struct {
	RequestID                    string                `json:"request_id"`
	XRequestID                   *string               `json:"x_request_id,omitempty"`
	Model                        *string               `json:"model,omitempty"`
	InputTokens                  *uint64               `json:"input_tokens,omitempty"`
	OutputTokens                 *uint64               `json:"output_tokens,omitempty"`
	CachedTokens                 *uint64               `json:"cached_tokens,omitempty"`
	RequestReceivedMs            *uint64               `json:"request_received_ms,omitempty"`
	PrefillWaitTimeMs            *F64                  `json:"prefill_wait_time_ms,omitempty"`
	PrefillTimeMs                *F64                  `json:"prefill_time_ms,omitempty"`
	TTFTMs                       *F64                  `json:"ttft_ms,omitempty"`
	TotalTimeMs                  *F64                  `json:"total_time_ms,omitempty"`
	AvgITLMs                     *F64                  `json:"avg_itl_ms,omitempty"`
	KVHitRate                    *F64                  `json:"kv_hit_rate,omitempty"`
	KVTransferEstimatedLatencyMs *F64                  `json:"kv_transfer_estimated_latency_ms,omitempty"`
	QueueDepth                   *uint64               `json:"queue_depth,omitempty"`
	Worker                       *WorkerInfo           `json:"worker,omitempty"`
	Replay                       *ReplayMetrics        `json:"replay,omitempty"`
	FinishReasonMetadata         *FinishReasonMetadata `json:"finish_reason_metadata,omitempty"`
}

// WorkerInfo is RequestTraceWorkerInfo.
type WorkerInfo struct {
	PrefillWorkerID *uint64 `json:"prefill_worker_id,omitempty"`
	PrefillDpRank   *uint32 `json:"prefill_dp_rank,omitempty"`
	DecodeWorkerID  *uint64 `json:"decode_worker_id,omitempty"`
	DecodeDpRank    *uint32 `json:"decode_dp_rank,omitempty"`
}

// ReplayMetrics is RequestReplayMetrics. InputSequenceHashes is a Vec
// serde always writes: Marshal writes [] for a nil one.
type ReplayMetrics struct {
	TraceBlockSize      uint64   `json:"trace_block_size"`
	InputLength         uint64   `json:"input_length"`
	InputSequenceHashes []uint64 `json:"input_sequence_hashes"`
	// KVHints is the KvHintEnvelope, raw JSON (types.rs@0366e63a; absent
	// from types.rs@bfc4785f).
	KVHints RawJSON `json:"kv_hints,omitempty"`
}

// FinishReasonMetadata is Dynamo's FinishReasonMetadata.
type FinishReasonMetadata struct {
	FinishReason        *string                      `json:"finish_reason,omitempty"`
	BackendFinishReason *string                      `json:"backend_finish_reason,omitempty"`
	StopReason          RawJSON                      `json:"stop_reason,omitempty"`
	ToolCalls           []ToolCallMetadata           `json:"tool_calls,omitempty"`
	Choices             []ChoiceFinishReasonMetadata `json:"choices,omitempty"`
}

// ToolCallMetadata is Dynamo's ToolCallMetadata.
type ToolCallMetadata struct {
	ChoiceIndex   uint32  `json:"choice_index"`
	ToolCallIndex uint32  `json:"tool_call_index"`
	ID            *string `json:"id,omitempty"`
	Name          *string `json:"name,omitempty"`
}

// ChoiceFinishReasonMetadata is Dynamo's ChoiceFinishReasonMetadata.
type ChoiceFinishReasonMetadata struct {
	ChoiceIndex         uint32  `json:"choice_index"`
	FinishReason        *string `json:"finish_reason,omitempty"`
	BackendFinishReason *string `json:"backend_finish_reason,omitempty"`
	StopReason          RawJSON `json:"stop_reason,omitempty"`
}

// ToolEvent is RequestTraceToolEvent.
type ToolEvent struct {
	ToolCallID      string  `json:"tool_call_id"`
	ToolClass       string  `json:"tool_class"`
	StartedAtUnixMs *uint64 `json:"started_at_unix_ms,omitempty"`
	EndedAtUnixMs   *uint64 `json:"ended_at_unix_ms,omitempty"`
	Status          *string `json:"status,omitempty"`
	DurationMs      *F64    `json:"duration_ms,omitempty"`
	OutputTokens    *uint64 `json:"output_tokens,omitempty"`
	OutputBytes     *uint64 `json:"output_bytes,omitempty"`
	ToolNameHash    *string `json:"tool_name_hash,omitempty"`
	ErrorType       *string `json:"error_type,omitempty"`
}

// Payload is RequestTracePayload. Request and Response are the OpenAI
// bodies as JSON (NvCreateChatCompletionRequest / Response); headers are
// a BTreeMap, written in key order as Go writes a map.
type Payload struct {
	RequestID          string             `json:"request_id"`
	Endpoint           string             `json:"endpoint"`
	Model              string             `json:"model"`
	Request            RawJSON            `json:"request,omitempty"`
	Response           RawJSON            `json:"response,omitempty"`
	HTTPRequestHeaders *map[string]string `json:"http_request_headers,omitempty"`
	PayloadComplete    bool               `json:"payload_complete"`
	PayloadDropReason  *string            `json:"payload_drop_reason,omitempty"`
}

// Ptr returns a pointer to v, for the optional fields.
func Ptr[T any](v T) *T { return &v }
