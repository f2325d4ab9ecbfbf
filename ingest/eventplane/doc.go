// Package eventplane reads Dynamo's event plane: KV events (topic
// "kv-events", a RouterEvent per frame), worker load (topic "kv_metrics",
// an ActiveLoad per frame) and, from KV routers with replica sync on,
// the routing-time request lifecycle (topic "active_sequences_events",
// ActiveSequenceEvents), each wrapped in an EventEnvelope. The NATS
// transport (DYN_EVENT_PLANE=nats) sends the envelope with a plain
// core-NATS publish, which JetStream stores when a stream captures the
// subject (see Scope.Apply, Scope.ApplySequences and the
// --dynamo-namespace and --dynamo-component flags); the ZMQ transport
// (Dynamo's default) is bridged onto the same subjects, with the same
// bytes, by package bridge (`hintstream bridge --dynamo-zmq`). Either
// way hintstream's consumers read one format.
//
// The rules follow ai-dynamo/dynamo at these commits (file → commit):
//
//   - lib/runtime/src/transports/event_plane/mod.rs → 0e8f300946240739dd57dda47f7a2f331c0b2a36:
//     EventPublisher: one random publisher_id per publisher (masked to
//     2^53-1), a sequence that starts at 0 and rises by one per publish
//     (fetch_add), published_at in Unix ms, subject scope.subject(topic).
//   - lib/runtime/src/transports/event_plane/codec.rs → bf0be57c8cf201ff2d95c1894a7e11792a3ff21b
//     (and the later revision with encode_envelope_parts): the envelope and
//     the payload are MessagePack, rmp_serde::to_vec_named (structs as maps
//     keyed by field name); the envelope's fields in order publisher_id,
//     sequence, published_at, topic, payload (payload as msgpack bin).
//   - lib/runtime/src/transports/event_plane/nats_transport.rs (NatsTransport)
//     and DistributedRuntime::kv_router_nats_publish_subject: the envelope
//     bytes are the whole NATS payload of a core publish, no headers.
//   - lib/runtime/src/discovery/mod.rs → 020f5c1764a947d1b006c2153c7fcd5d3d9bc66c:
//     EventScope::subject: "namespace.{ns}.component.{comp}.{topic}" (and
//     ".endpoint.{ep}" before the topic for an endpoint scope), each segment
//     percent-encoded except ASCII letters, digits, '-' and '_'. NATS is the
//     transport with DYN_EVENT_PLANE=nats (some revisions also pick it by
//     default for etcd or Kubernetes discovery); the ZMQ transport is not
//     read here.
//   - lib/llm/src/kv_router/publisher/mod.rs → 0a569b63cc09aca289e62d4e296b7a9ada92c8c3
//     and publisher/sinks.rs → 833037a8d60720631f09ea09a0ae06b05332e6c6: KV
//     events are published component-scoped on topic KV_EVENT_SUBJECT
//     ("kv-events", lib/llm/src/kv_router.rs → ecd2979910e8ddc97f9aaf02f4dba7b61ae7d930),
//     one RouterEvent per frame.
//   - lib/llm/src/kv_router/publisher/worker_metrics.rs → 3c095f401ae223b947290e0055eb4193e6628f4a:
//     load is published endpoint-scoped on KV_METRICS_SUBJECT ("kv_metrics");
//     older revisions publish it component-scoped. Both are captured.
//   - lib/kv-router/src/protocols.rs → 038eab23a6b6e9b6391de6640f4f69d4c2726681:
//     RouterEvent {worker_id, storage_tier, residency_domain?, event,
//     state_source?}, KvCacheEvent {event_id, data, dp_rank},
//     KvCacheEventData externally tagged (unit variant "cleared" as a bare
//     string, as rmp_serde writes unit variants), ActiveLoad;
//     ActiveSequenceEvent {request_id, worker: {worker_id, dp_rank}, data,
//     router_id, lora_name?}, ActiveSequenceEventBatch {events},
//     ActiveSequenceEventData (no rename: "AddRequest" {token_sequence,
//     track_prefill_tokens, expected_output_tokens, prefill_load_hint},
//     "Free", "MarkPrefillCompleted"), PrefillLoadHint. Earlier revisions'
//     AddRequest carries isl and overlap instead, and the event a bare
//     worker_id: both are read.
//   - lib/llm/src/kv_router/sequence.rs → 0266c3eba4f56312ce2cae8cc69db3cb2cbc4402:
//     the router publishes ActiveSequenceEvents endpoint-scoped on the
//     workers' endpoint (earlier revisions component-scoped), one event a
//     frame on NATS and an ActiveSequenceEventBatch (up to 256 events,
//     1 ms) on ZMQ; token_sequence is None with router_track_active_blocks
//     off (lib/llm/src/kv_router config).
//   - lib/runtime/src/transports/event_plane/zmq_transport.rs → 9dd09cdb79b22597f611c4a84682dfd2ebd55d90
//     and frame.rs (read in the wxsms/dynamo mirror at
//     ebde0f662ca789686611a2a3c635cda2e24879eb; the index holds no
//     ai-dynamo copy): see package bridge for the ZMQ wire.
//
// Every decoder here returns a *schemas.DecodeError (errors.Is
// schemas.ErrMalformed) with a short, stable reason, and never panics.
package eventplane
