// Package agentevents carries an agent harness's tool lifecycle records
// from its ZeroMQ PUB socket onto JetStream and decodes them there.
//
// # Harness wire
//
// As Dynamo's relay reads it (ai-dynamo/dynamo
// lib/llm/src/agents/trace/relay.rs@02282206): a PUB socket, one
// multipart message per record, [topic, seq_be_u64, msgpack(record)].
// The topic is any bytes (Dynamo's relay subscribes to all, and its own
// test sends an empty one); seq is 8 bytes big-endian, counting from 1
// for each harness process (docs/agents/agent-harnesses.md asks for a
// "monotonic sequence"), so a restarted harness starts again low. The
// record is Dynamo's AgentTraceRecord (lib/llm/src/agents/trace/types.rs
// @7d5c5a62), msgpack with named fields (rmp_serde::to_vec_named):
//
//	{ "schema": "dynamo.agent.trace.v1",
//	  "event_type": "tool_start" | "tool_end" | "tool_error",
//	  "event_time_unix_ms": u64, "event_source": "harness",
//	  "agent_context": { "workflow_type_id", "workflow_id", "program_id",
//	                     "parent_program_id"? },
//	  "tool": { "tool_call_id", "tool_class", "status"?, "duration_ms"? (f64),
//	            "started_at_unix_ms"?, "ended_at_unix_ms"?, "output_tokens"?,
//	            "output_bytes"?, "tool_name_hash"?, "error_type"? } }
//
// Decode holds a record to what Dynamo's own validate_tool_record
// (record.rs@32d19f55) and serde would accept, plus bounds: the schema
// must be v1, the source a harness ("harness", or its alias "ms_agent"),
// the event a tool event with a tool and no request metrics; status takes
// serde's aliases (ok/success, failed, timeout/canceled); duration_ms may
// be any msgpack number (serde reads an integer into an f64) but must be
// finite and not negative; unknown members are skipped, as serde does.
//
// # On the bus
//
// Bridge republishes each record unchanged (Content-Type
// application/msgpack) on Subject(record): agent.events.<workflow_id as
// one subject token>, so a workflow's records keep their order on one
// subject. The stream is AGENT_EVENTS (agent.events.>), created when
// absent and attached when present like hintstream's others. Headers:
// Hintstream-Agent-Publisher (the topic, or the endpoint when the topic
// is empty), Hintstream-Seq (the harness's seq) and a Nats-Msg-Id of
//
//	agent-<xxh3(publisher) hex>-<seq>-<xxh3(record) hex>
//
// A harness keeps no incarnation id, and a restarted one sends seq 1, 2,
// ... again; a Msg-Id of publisher and seq alone would make JetStream
// drop the new incarnation's first records as duplicates of the old
// one's. The record's own hash tells them apart (each carries its event
// time in ms and its tool call id), while a record received twice — a
// bridge restarted under the same harness, or two bridges on one harness
// — has the same bytes, so the same Msg-Id, and is stored once within
// the stream's duplicate window. No bridge state is needed for it.
//
// Sequence rules, per publisher: a seq above the last one + 1 is a gap
// (the records between are counted as missed); a seq of 1 (or 0) after a
// higher one is a harness restart; any other seq at or below the last is
// out of order and still published (its Msg-Id stores it at most once).
// A frame that breaks the wire (frame count, seq length, a record Decode
// refuses) is counted and copied to hintstream.dlq.agent_events with its
// reason in Hintstream-Error.
package agentevents
