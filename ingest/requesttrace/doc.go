// Package requesttrace decodes the request-trace records an unmodified
// Dynamo frontend publishes (DYN_REQUEST_TRACE=1): one JSON object per
// record, on the JetStream subject dynamo.request_trace.v1 (the nats
// sink) or one a line in a file (the file sink).
//
// # Upstream
//
// The record is Dynamo's RequestTraceRecord, serialised by serde_json
// (ai-dynamo/dynamo lib/llm/src/request_trace/types.rs@0366e63a; the
// earlier types.rs@bfc4785f is the same less replay.kv_hints):
//
//	{ "schema": "dynamo.request.trace.v1",
//	  "event_type": "request_end" | "request_payload" | "tool_start" | "tool_end" | "tool_error",
//	  "event_time_unix_ms": u64,
//	  "event_source"?: "dynamo" | "harness",
//	  "agent_context"?: { "session_id", "parent_session_id"?, "session_final"?,
//	                      "compaction"?, "kv_hints"?: {"evict_session"},
//	                      "input_trigger"?: "user_message" | "tool_result" | "other" },
//	  "request"?: { "request_id", "x_request_id"?, "model"?, "input_tokens"?,
//	                "output_tokens"?, "cached_tokens"?, "request_received_ms"?,
//	                "prefill_wait_time_ms"?, "prefill_time_ms"?, "ttft_ms"?,
//	                "total_time_ms"?, "avg_itl_ms"?, "kv_hit_rate"?,
//	                "kv_transfer_estimated_latency_ms"?, "queue_depth"?,
//	                "worker"?: { "prefill_worker_id"?, "prefill_dp_rank"?,
//	                             "decode_worker_id"?, "decode_dp_rank"? },
//	                "replay"?: { "trace_block_size", "input_length",
//	                             "input_sequence_hashes": [u64], "kv_hints"? },
//	                "finish_reason_metadata"?: { "finish_reason"?, "backend_finish_reason"?,
//	                    "stop_reason"?, "tool_calls"?: [{ "choice_index", "tool_call_index",
//	                    "id"?, "name"? }], "choices"?: [...] } },
//	  "tool"?: { "tool_call_id", "tool_class", "started_at_unix_ms"?,
//	             "ended_at_unix_ms"?, "status"?, "duration_ms"?, "output_tokens"?,
//	             "output_bytes"?, "tool_name_hash"?, "error_type"? },
//	  "payload"?: { "request_id", "endpoint", "model", "request"?, "response"?,
//	                "http_request_headers"?, "payload_complete", "payload_drop_reason"? } }
//
// "?" marks an Option that serde omits when None (skip_serializing_if),
// and the two Vecs it omits when empty. The agent context is Dynamo's
// AgentContext (lib/llm/src/protocols/common/extensions.rs@004e2c53),
// whose InputTrigger is snake_case. Integers are u64 (u32 for dp ranks and
// tool-call indices, usize for the replay sizes), times are f64 ms;
// finish_reason is the OpenAI FinishReason in snake_case (stop, length,
// tool_calls, content_filter, function_call). stop_reason is kept raw.
//
// # Sequence hashes
//
// replay.input_sequence_hashes are Dynamo's rolling sequence hashes of the
// prompt's blocks of trace_block_size tokens, as its router computes them
// (XXH3-64, seed 1337, lib/llm/src/request_trace/replay.rs@0366e63a), with
// one more when the prompt does not fill its last block: a hash of that
// partial block, which no KV event ever names. A record always carries
// input_length (the prompt's token count), so the full blocks are
// input_length / trace_block_size, and Replay.Full returns the hashes of
// those only; the partial tail is dropped. A record with more hashes than
// the prompt has blocks (full or partial) is refused; one with fewer is
// read as it is (all its hashes full).
//
// # Bounds and errors
//
// Errors are *schemas.DecodeError of Kind (errors.Is schemas.ErrMalformed)
// with a short, stable reason (AllReasons). The hash list is parsed
// without a slice for all of it: past Limits.MaxHashes it is refused,
// whatever its length on the wire. The schema, the event type and a tool's
// status are as strict as serde's: an unknown one is refused. An unknown
// event source or input trigger is kept as given (a newer frontend's
// record is still a request's or a tool's, and refusing it would stop
// them all); unknown members are skipped, as serde skips them.
//
// # Files
//
// The file sink (sink.rs@0366e63a) writes through Dynamo's JSONL recorder
// (lib/llm/src/recorder.rs@03b41453, telemetry/jsonl_gz.rs@161ff57c):
// each line is {"timestamp": ms since the sink started, "event": record},
// and by default (DYN_REQUEST_TRACE_FILE_COMPRESSION unset) the file is a
// series of gzip members. The stderr sink writes the bare record a line.
// DecodeLine reads either line form.
package requesttrace
