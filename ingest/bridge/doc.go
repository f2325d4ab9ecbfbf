// Package bridge republishes an engine's ZeroMQ KV-event stream to
// JetStream, turning a lossy PUB stream into a durable, replayable one
// (Bridge), and does the same for Dynamo's ZMQ event plane
// (EventPlaneBridge, below).
//
// # Engine wire
//
// As vLLM's ZmqEventPublisher speaks it (vllm/distributed/kv_events.py in
// vllm-project/vllm, read for this package; SGLang's copy in
// python/sglang/srt/disaggregation/kv_events.py is the same):
//
//   - PUB, multipart [topic, seq, payload]: topic is the configured topic
//     in UTF-8 (empty by default), seq is seq.to_bytes(8, "big") with seq
//     from itertools.count() (0, 1, 2, ... for each publisher instance, so
//     an engine restart starts at 0 again), payload is the msgpack
//     EventBatch. The bridge passes the payload on unchanged.
//   - Replay, a ROUTER bound at replay_endpoint (_service_replay): a
//     request must arrive as exactly three frames [identity, b"",
//     start_seq] (anything else is logged and ignored), start_seq read
//     with int.from_bytes(.., "big"). For every buffered (seq, payload),
//     oldest first, with seq >= start_seq the ROUTER sends [identity, b"",
//     seq (8 bytes big-endian), payload], then [identity, b"", END_SEQ,
//     b""] with END_SEQ = (-1).to_bytes(8, "big", signed=True). The buffer
//     is a deque of the last buffer_steps (10000) batches. So the client
//     is a DEALER that sends [b"", start_seq] and reads [b"", seq, payload]
//     until END_SEQ; a REQ socket would keep only the first reply. The
//     ROUTER is served by the publisher thread between two sends, and a
//     batch is buffered right after it is sent on PUB, so a replay asked
//     for after a live message arrived includes that message.
//
// # What is published
//
// Each batch goes to Config.Subject (kv.events.<worker_id>) with the
// payload unchanged and the headers Content-Type: application/msgpack,
// Hintstream-Seq (engine seq), Hintstream-Epoch, Hintstream-Dp-Rank and
// Nats-Msg-Id = "<worker>-<dp rank>-<epoch>-<seq>".
//
// The epoch names one engine incarnation. An engine restart reuses seq
// 0, 1, ..., so a Msg-Id of worker, rank and seq alone would make
// JetStream drop the new incarnation's first batches as duplicates of
// the old one's for the stream's duplicate window. The epoch is the
// Unix time in milliseconds at which a bridge first saw the incarnation,
// kept in the stream itself: at start-up the bridge reads the last
// message it published (same subject and dp rank) and keeps its epoch
// when the engine still holds that batch with the same bytes (asked by
// replay) or, without replay, when the first live seq is above it. So a
// restarted bridge that replays old batches produces the same Msg-Ids and
// JetStream stores them once. Caveat: two bridges on one engine (a hot
// standby) each pick their own epoch for an incarnation that starts
// while both run, so their copies are not deduplicated.
//
// # Ordering, gaps and restarts
//
// Within one epoch the bridge publishes seqs in increasing order, each at
// most once. A jump in the live seq is a gap: with a replay endpoint the
// bridge asks for the missing batches (and one before them, to check
// that the engine did not restart), publishes them in order and then
// goes on; live batches that arrive meanwhile wait in the SUB socket's
// queue (bounded by its receive high-water mark; what overflows is a new
// gap) and those already published are skipped. Without a replay endpoint
// the gap is counted and logged and the bridge goes on. A live seq at or
// below the previous live seq, or a replayed batch whose bytes differ
// from the ones published under its seq, means the engine restarted: a
// new epoch begins and, with replay, the bridge fetches the new
// incarnation's batches from 0.
//
// # Dynamo's ZMQ event plane
//
// EventPlaneBridge reads the publishers of Dynamo's event plane when it
// runs on ZMQ (DYN_EVENT_PLANE=zmq, Dynamo's default): each
// EventPublisher's own PUB socket, or a broker's XPUB. Messages are
// [topic, publisher_id, sequence, 5-byte header + EventEnvelope]
// (eventplane.ParseZMQ has the wire and its sources). Each envelope that
// agrees with its frames goes to JetStream unchanged, with only
// Nats-Msg-Id "ep-<publisher_id>-<sequence>", on the subject Dynamo's NATS
// transport would have used (eventplane.ZMQMessage.Subject), so the
// consumers that read the NATS transport read it with no change. There is
// no replay on this transport: a jump in a publisher's sequence is
// counted and logged (eventplane.Gaps) and the index sees the same jump
// in the envelopes. A message that breaks the wire is counted by reason
// and its last frame copied to DefaultEventPlaneDeadLetter.
package bridge
