package bridge_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/bridge"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

const worker = 7

var subject = streams.KVEventSubject(worker)

// setup starts JetStream with the default KV_EVENTS stream.
func setup(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, js := natstest.Connect(t, natstest.Start(t))
	if _, _, err := streams.Ensure(context.Background(), js, streams.DefaultSet().KVEvents); err != nil {
		t.Fatal(err)
	}
	return js
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// running is a Bridge whose Run goes on in a goroutine.
type running struct {
	*bridge.Bridge
	cancel context.CancelFunc
	done   chan error
	err    error
	ended  bool
}

func startBridge(t *testing.T, js jetstream.JetStream, cfg bridge.Config, opts ...bridge.Option) *running {
	t.Helper()
	log := slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	b := bridge.New(js, cfg, append([]bridge.Option{bridge.WithLogger(log)}, opts...)...)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Bridge: b, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- b.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels Run and fails the test unless it returns nil promptly.
func (r *running) stop(t *testing.T) {
	t.Helper()
	if r.ended {
		return
	}
	r.cancel()
	select {
	case r.err = <-r.done:
		r.ended = true
	case <-time.After(natstest.Within(3 * time.Second)):
		t.Fatal("Run did not return after cancel")
	}
	if r.err != nil {
		t.Fatalf("Run returned %v after cancel, want nil", r.err)
	}
}

// within polls cond until it holds or d passes; it never fails the test.
func within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// warmUp publishes one batch at a time until the bridge has read one from
// the SUB socket: before that, PUB drops everything (the slow joiner).
// From the first batch received on, PUB delivers every later one.
func warmUp(t *testing.T, eng *pypeer.EnginePub, b *running) []pypeer.Batch {
	t.Helper()
	before := b.Stats().Received
	var sent []pypeer.Batch
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		sent = append(sent, eng.Publish(1)...)
		if within(200*time.Millisecond, func() bool { return b.Stats().Received > before }) {
			return sent
		}
	}
	t.Fatalf("the bridge received nothing from %d batches in 15s", len(sent))
	return nil
}

// waitStored waits until the stream's last message is the last of sent.
func waitStored(t *testing.T, js jetstream.JetStream, sent []pypeer.Batch) {
	t.Helper()
	last := sent[len(sent)-1].Seq
	natstest.Eventually(t, 10*time.Second, func() bool {
		msgs := storedMsgs(t, js)
		return len(msgs) > 0 && headerSeq(t, msgs[len(msgs)-1]) == last
	}, "seq %d stored", last)
}

// settled waits until b's Published counter covers every message in the
// stream: JetStream shows a message before its PubAck reaches the bridge
// and the counter moves, so stats read right after waitStored can be one
// short. Only for tests where b is the stream's one publisher.
func settled(t *testing.T, js jetstream.JetStream, b *running) bridge.Stats {
	t.Helper()
	var s bridge.Stats
	natstest.Eventually(t, 10*time.Second, func() bool {
		s = b.Stats()
		return s.Published == msgCount(t, js)
	}, "the bridge's published counter at the stream's %d messages", msgCount(t, js))
	return s
}

func storedMsgs(t *testing.T, js jetstream.JetStream) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := context.Background()
	st, err := js.Stream(ctx, streams.DefaultSet().KVEvents.Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream message %d: %v", seq, err)
		}
		out = append(out, m)
	}
	return out
}

func msgCount(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), streams.DefaultSet().KVEvents.Name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Msgs
}

func waitCount(t *testing.T, js jetstream.JetStream, n uint64) {
	t.Helper()
	natstest.Eventually(t, 10*time.Second, func() bool { return msgCount(t, js) >= n }, "%d messages in the stream", n)
	if got := msgCount(t, js); got != n {
		t.Fatalf("stream holds %d messages, want %d", got, n)
	}
}

func headerSeq(t *testing.T, m *jetstream.RawStreamMsg) uint64 {
	t.Helper()
	s, err := strconv.ParseUint(m.Header.Get(schemas.HeaderBridgeSeq), 10, 64)
	if err != nil {
		t.Fatalf("stream message %d: %s %q: %v", m.Sequence, schemas.HeaderBridgeSeq, m.Header.Get(schemas.HeaderBridgeSeq), err)
	}
	return s
}

// checkSame fails unless msgs carry exactly batches, in order, with the
// bridge's headers.
func checkSame(t *testing.T, msgs []*jetstream.RawStreamMsg, batches []pypeer.Batch) {
	t.Helper()
	if len(msgs) != len(batches) {
		t.Fatalf("%d messages, want %d", len(msgs), len(batches))
	}
	for i, m := range msgs {
		b := batches[i]
		epoch := m.Header.Get(schemas.HeaderBridgeEpoch)
		switch {
		case m.Subject != subject:
			t.Errorf("message %d: subject %q, want %q", i, m.Subject, subject)
		case headerSeq(t, m) != b.Seq:
			t.Errorf("message %d: seq %d, want %d", i, headerSeq(t, m), b.Seq)
		case !bytes.Equal(m.Data, b.Payload):
			t.Errorf("message %d (seq %d): payload differs from what the engine sent", i, b.Seq)
		case m.Header.Get("Content-Type") != "application/msgpack":
			t.Errorf("message %d: Content-Type %q", i, m.Header.Get("Content-Type"))
		case m.Header.Get(schemas.HeaderBridgeDpRank) != "0":
			t.Errorf("message %d: dp rank header %q", i, m.Header.Get(schemas.HeaderBridgeDpRank))
		case m.Header.Get(nats.MsgIdHdr) != fmt.Sprintf("%d-0-%s-%d", worker, epoch, b.Seq):
			t.Errorf("message %d: Nats-Msg-Id %q, epoch %q", i, m.Header.Get(nats.MsgIdHdr), epoch)
		}
	}
}

// tail returns the messages from the one holding seq on.
func tail(t *testing.T, msgs []*jetstream.RawStreamMsg, seq uint64) []*jetstream.RawStreamMsg {
	t.Helper()
	for i, m := range msgs {
		if headerSeq(t, m) == seq {
			return msgs[i:]
		}
	}
	t.Fatalf("no message with seq %d", seq)
	return nil
}

func TestRepublishesInOrder(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	b := startBridge(t, js, bridge.Config{Endpoint: pub, WorkerID: worker})

	waitStored(t, js, warmUp(t, eng, b))
	before := settled(t, js, b).Published

	sent := eng.Publish(20) // both the map and the array form
	waitCount(t, js, before+20)
	msgs := storedMsgs(t, js)
	checkSame(t, msgs[before:], sent)
	if s := settled(t, js, b); s.Gaps != 0 || s.Lost != 0 || s.Published != before+20 || s.Duplicates != 0 {
		t.Errorf("stats %+v", s)
	}
}

func TestGapFilledByReplay(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, rep := eng.Endpoints()
	b := startBridge(t, js, bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker})

	all := warmUp(t, eng, b) // replay fills what the slow joiner lost
	waitCount(t, js, uint64(len(all)))
	s0, r0 := b.Stats(), eng.ReplayRequests()

	all = append(all, eng.Publish(3)...)
	all = append(all, eng.Skip(4)...)
	all = append(all, eng.Publish(3)...)
	waitCount(t, js, uint64(len(all)))
	checkSame(t, storedMsgs(t, js), all)

	s := b.Stats()
	if s.Gaps-s0.Gaps != 1 || s.Lost != 0 || s.Replayed-s0.Replayed < 4 {
		t.Errorf("stats %+v, before the gap %+v", s, s0)
	}
	if eng.ReplayRequests() == r0 {
		t.Error("the engine served no replay for the gap")
	}
}

func TestGapCountedWithoutReplay(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	b := startBridge(t, js, bridge.Config{Endpoint: pub, WorkerID: worker})

	waitStored(t, js, warmUp(t, eng, b))
	before, s0 := msgCount(t, js), b.Stats()

	want := eng.Publish(3)
	eng.Skip(4)
	want = append(want, eng.Publish(3)...)
	waitCount(t, js, before+6)
	checkSame(t, storedMsgs(t, js)[before:], want)
	s := b.Stats()
	if s.Gaps-s0.Gaps != 1 || s.Lost-s0.Lost != 4 || s.Received-s0.Received != 6 {
		t.Errorf("stats %+v, before %+v: want one gap of 4 lost batches and 6 received", s, s0)
	}
}

func TestRestartedBridgeStoresOnce(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, rep := eng.Endpoints()
	cfg := bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker}
	a := startBridge(t, js, cfg)
	all := warmUp(t, eng, a)
	all = append(all, eng.Publish(5)...)
	waitCount(t, js, uint64(len(all)))
	a.stop(t)
	stored := uint64(len(all))

	// While no bridge runs, PUB drops these; the engine buffers them.
	all = append(all, eng.Publish(3)...)

	// Asked to replay everything, the new bridge publishes the stored
	// batches again under the same Msg-Ids: JetStream keeps one copy.
	b := startBridge(t, js, cfg, bridge.WithReplayFrom(0))
	waitCount(t, js, uint64(len(all)))
	all = append(all, warmUp(t, eng, b)...)
	waitCount(t, js, uint64(len(all)))
	msgs := storedMsgs(t, js)
	checkSame(t, msgs, all)

	s := b.Stats()
	if s.Duplicates < stored || s.Restarts != 0 {
		t.Errorf("stats %+v: want >= %d duplicates and no restart", s, stored)
	}
	for _, m := range msgs {
		if m.Header.Get(schemas.HeaderBridgeEpoch) != msgs[0].Header.Get(schemas.HeaderBridgeEpoch) {
			t.Fatalf("message %d has epoch %s, the first %s: the restarted bridge did not keep the engine's epoch",
				m.Sequence, m.Header.Get(schemas.HeaderBridgeEpoch), msgs[0].Header.Get(schemas.HeaderBridgeEpoch))
		}
	}
}

func TestSlowJoinerCoveredByStartupReplay(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, rep := eng.Endpoints()
	// Nobody subscribes yet: PUB drops all five.
	all := eng.Publish(5)
	b := startBridge(t, js, bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker})
	waitCount(t, js, 5)
	checkSame(t, storedMsgs(t, js), all)
	if s := b.Stats(); s.Replayed != 5 || s.Received != 0 || s.Gaps != 0 {
		t.Errorf("stats %+v: want the five from the start-up replay", s)
	}

	all = append(all, warmUp(t, eng, b)...)
	all = append(all, eng.Publish(10)...)
	waitCount(t, js, uint64(len(all)))
	checkSame(t, storedMsgs(t, js), all)
}

func TestEngineRestartStartsNewEpoch(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, rep := eng.Endpoints()
	b := startBridge(t, js, bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker})
	old := warmUp(t, eng, b)
	old = append(old, eng.Publish(3)...)
	waitCount(t, js, uint64(len(old)))

	// The new incarnation's seqs 0..3 were all used before; with a
	// Msg-Id of worker, rank and seq alone JetStream would drop them.
	eng.Restart()
	fresh := eng.Publish(4)
	waitCount(t, js, uint64(len(old)+len(fresh)))
	msgs := storedMsgs(t, js)
	checkSame(t, msgs[:len(old)], old)
	checkSame(t, msgs[len(old):], fresh)
	e1, _ := strconv.ParseUint(msgs[0].Header.Get(schemas.HeaderBridgeEpoch), 10, 64)
	e2, _ := strconv.ParseUint(msgs[len(old)].Header.Get(schemas.HeaderBridgeEpoch), 10, 64)
	if e2 <= e1 {
		t.Errorf("epoch after the restart %d, before %d: want a later one", e2, e1)
	}
	if s := b.Stats(); s.Restarts != 1 || s.Lost != 0 {
		t.Errorf("stats %+v: want one restart, nothing lost", s)
	}
}

func TestEngineRestartWhileBridgeDown(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, rep := eng.Endpoints()
	cfg := bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker}
	a := startBridge(t, js, cfg)
	old := warmUp(t, eng, a)
	old = append(old, eng.Publish(3)...)
	waitCount(t, js, uint64(len(old)))
	a.stop(t)

	eng.Restart()
	fresh := eng.Publish(2) // seqs 0 and 1 again, which PUB drops
	b := startBridge(t, js, cfg)
	waitCount(t, js, uint64(len(old)+len(fresh)))
	msgs := storedMsgs(t, js)
	checkSame(t, msgs[len(old):], fresh)
	if msgs[0].Header.Get(schemas.HeaderBridgeEpoch) == msgs[len(old)].Header.Get(schemas.HeaderBridgeEpoch) {
		t.Error("the restarted engine's batches kept the old epoch")
	}
	if s := b.Stats(); s.Restarts != 1 || s.Replayed != 2 {
		t.Errorf("stats %+v: want the restart seen at start-up and two batches replayed", s)
	}
}

func TestEngineRestartWhileBridgeDownNoReplay(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	cfg := bridge.Config{Endpoint: pub, WorkerID: worker}
	a := startBridge(t, js, cfg)
	waitStored(t, js, warmUp(t, eng, a))
	waitStored(t, js, eng.Publish(50))
	a.stop(t)
	old := msgCount(t, js)

	// The new incarnation reuses seqs the stream holds: the bridge must
	// see the restart (a first live seq not above the stored one) and
	// change the epoch, or JetStream would drop these as duplicates.
	eng.Restart()
	b := startBridge(t, js, cfg)
	fresh := warmUp(t, eng, b)
	if fresh[len(fresh)-1].Seq > 50 {
		t.Fatalf("warm-up took %d batches; the test needs the first one received to reuse a stored seq", len(fresh))
	}
	fresh = append(fresh, eng.Publish(5)...)
	waitStored(t, js, fresh)
	msgs := storedMsgs(t, js)[old:]
	if len(msgs) < 6 || msgs[0].Header.Get(schemas.HeaderBridgeEpoch) == storedMsgs(t, js)[0].Header.Get(schemas.HeaderBridgeEpoch) {
		t.Fatalf("%d new messages; want at least 6 under a new epoch", len(msgs))
	}
	checkSame(t, msgs[len(msgs)-5:], fresh[len(fresh)-5:])
	if s := b.Stats(); s.Restarts != 1 || s.Duplicates != 0 {
		t.Errorf("stats %+v: want one restart and no duplicates", s)
	}
}

// Two dp ranks of one worker publish to one subject; a restarted rank-0
// bridge must find its own last batch behind rank 1's.
func TestDpRanksShareSubject(t *testing.T) {
	js := setup(t)
	eng0 := pypeer.StartEnginePub(t)
	eng1 := pypeer.StartEnginePubWith(t, pypeer.EnginePubOptions{DpRank: 1})
	pub0, rep0 := eng0.Endpoints()
	pub1, rep1 := eng1.Endpoints()
	cfg0 := bridge.Config{Endpoint: pub0, ReplayEndpoint: rep0, WorkerID: worker}
	a0 := startBridge(t, js, cfg0)
	a1 := startBridge(t, js, bridge.Config{Endpoint: pub1, ReplayEndpoint: rep1, WorkerID: worker, DpRank: 1})
	n0 := uint64(len(warmUp(t, eng0, a0)) + len(eng0.Publish(3)))
	waitCount(t, js, n0)
	n1 := uint64(len(warmUp(t, eng1, a1)) + len(eng1.Publish(3)))
	waitCount(t, js, n0+n1)
	a0.stop(t)
	a1.stop(t)
	msgs := storedMsgs(t, js)
	if last := msgs[len(msgs)-1]; last.Header.Get(schemas.HeaderBridgeDpRank) != "1" {
		t.Fatalf("last message is from dp rank %q; the test needs rank 1 last", last.Header.Get(schemas.HeaderBridgeDpRank))
	}
	if msgs[0].Header.Get(nats.MsgIdHdr) == "" || !bytes.HasPrefix([]byte(msgs[len(msgs)-1].Header.Get(nats.MsgIdHdr)), []byte("7-1-")) {
		t.Errorf("Msg-Ids %q, %q", msgs[0].Header.Get(nats.MsgIdHdr), msgs[len(msgs)-1].Header.Get(nats.MsgIdHdr))
	}

	b0 := startBridge(t, js, cfg0, bridge.WithReplayFrom(0))
	natstest.Eventually(t, 10*time.Second, func() bool { return b0.Stats().Duplicates == n0 },
		"rank 0's %d batches acked as duplicates", n0)
	if got := msgCount(t, js); got != n0+n1 {
		t.Errorf("stream holds %d messages after the rank-0 replay, want %d", got, n0+n1)
	}
	if s := b0.Stats(); s.Published != 0 || s.Restarts != 0 {
		t.Errorf("stats %+v: want nothing new and no restart", s)
	}
}

// router is a ROUTER that takes replay requests and never answers.
func router(t *testing.T) (*zmq.Socket, string) {
	t.Helper()
	s, err := zmq.NewSocket(zmq.ROUTER)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRcvtimeo(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := s.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, err := s.GetLastEndpoint()
	if err != nil {
		t.Fatal(err)
	}
	return s, ep
}

func TestRunReturnsOnCancelDuringReplay(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	rt, rep := router(t)
	// Warm the connection's request machinery so that it is in the baseline.
	if _, err := js.Stream(context.Background(), "KV_EVENTS"); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()

	b := startBridge(t, js, bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker},
		bridge.WithReplayTimeout(time.Minute), bridge.WithReplayFrom(42))
	// vLLM's ROUTER reads [identity, "", start_seq (8 bytes big-endian)].
	req, err := rt.RecvMessageBytes(0)
	if err != nil {
		t.Fatalf("no replay request: %v", err)
	}
	if len(req) != 3 || len(req[1]) != 0 || len(req[2]) != 8 || binary.BigEndian.Uint64(req[2]) != 42 {
		t.Fatalf("replay request %q, want [identity, \"\", 42 as 8 bytes]", req)
	}
	start := time.Now()
	b.stop(t)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Run took %v to return", d)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return runtime.NumGoroutine() <= base },
		"goroutines back to %d (now %d)", base, runtime.NumGoroutine())
}

func TestReplayTimeoutCountsLoss(t *testing.T) {
	js := setup(t)
	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	_, rep := router(t)
	b := startBridge(t, js, bridge.Config{Endpoint: pub, ReplayEndpoint: rep, WorkerID: worker},
		bridge.WithReplayTimeout(200*time.Millisecond))
	waitStored(t, js, warmUp(t, eng, b))
	s0 := settled(t, js, b)

	want := eng.Publish(2)
	eng.Skip(3)
	want = append(want, eng.Publish(2)...)
	natstest.Eventually(t, 10*time.Second, func() bool { return b.Stats().Published-s0.Published == 4 }, "four more published")
	checkSame(t, storedMsgs(t, js)[s0.Published:], want)
	s := b.Stats()
	if s.Gaps-s0.Gaps != 1 || s.Lost-s0.Lost != 3 || s.ReplayFailures-s0.ReplayFailures != 1 {
		t.Errorf("stats %+v, before %+v: want one gap, 3 lost, one failed replay", s, s0)
	}
}

func TestMalformedMessagesSkipped(t *testing.T) {
	js := setup(t)
	pub, err := zmq.NewSocket(zmq.PUB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	if err := pub.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := pub.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, _ := pub.GetLastEndpoint()
	b := startBridge(t, js, bridge.Config{Endpoint: ep, WorkerID: worker})

	payload := []byte{0x81, 0xa2, 't', 's', 0x01} // {"ts": 1}
	send := func(frames ...[]byte) {
		t.Helper()
		for i, f := range frames {
			flag := zmq.SNDMORE
			if i == len(frames)-1 {
				flag = 0
			}
			if _, err := pub.SendBytes(f, flag); err != nil {
				t.Fatal(err)
			}
		}
	}
	seqb := func(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }
	var seq uint64
	for deadline := time.Now().Add(10 * time.Second); b.Stats().Received == 0; seq++ {
		if time.Now().After(deadline) {
			t.Fatal("nothing received")
		}
		send(nil, seqb(seq), payload)
		within(100*time.Millisecond, func() bool { return b.Stats().Received > 0 })
	}
	natstest.Eventually(t, 5*time.Second, func() bool { return b.Stats().Received == b.Stats().Published }, "warm-up published")
	s0 := b.Stats()

	send(nil, seqb(seq))                              // two frames
	send(nil, []byte{0, 0, 0, 1}, payload)            // short seq
	send(nil, seqb(seq), []byte{0xc0})                // msgpack nil, not a batch
	send(nil, seqb(seq), nil)                         // empty payload
	send(nil, seqb(1<<63), payload)                   // seq out of range
	send(nil, seqb(seq), payload, []byte("trailing")) // four frames
	send(nil, seqb(seq), payload)                     // good again
	natstest.Eventually(t, 5*time.Second, func() bool { return b.Stats().Published == s0.Published+1 }, "the good one published")
	if s := b.Stats(); s.Malformed-s0.Malformed != 6 || s.Gaps != 0 {
		t.Errorf("stats %+v, before %+v: want 6 malformed, no gap", s, s0)
	}
}

func TestRunErrors(t *testing.T) {
	js := setup(t)
	ctx := context.Background()
	if err := bridge.New(js, bridge.Config{WorkerID: 1}).Run(ctx); !errors.Is(err, bridge.ErrConfig) {
		t.Errorf("no endpoint: %v, want ErrConfig", err)
	}
	if err := bridge.New(js, bridge.Config{Endpoint: "tcp://127.0.0.1:1", Subject: "kv.events.*"}).Run(ctx); !errors.Is(err, bridge.ErrConfig) {
		t.Errorf("wildcard subject: %v, want ErrConfig", err)
	}
	err := bridge.New(js, bridge.Config{Endpoint: "tcp://127.0.0.1:1", Subject: "elsewhere.1"}).Run(ctx)
	if !errors.Is(err, bridge.ErrNoStream) {
		t.Errorf("uncaptured subject: %v, want ErrNoStream", err)
	}
	if err := bridge.New(js, bridge.Config{Endpoint: "nonsense://x", WorkerID: 1}).Run(ctx); err == nil {
		t.Error("bad endpoint: Run returned nil")
	}

	eng := pypeer.StartEnginePub(t)
	pub, _ := eng.Endpoints()
	b := startBridge(t, js, bridge.Config{Endpoint: pub, WorkerID: worker})
	warmUp(t, eng, b) // Run is surely under way
	if err := b.Run(ctx); !errors.Is(err, bridge.ErrRunning) {
		t.Errorf("second Run: %v, want ErrRunning", err)
	}
}

func TestMsgID(t *testing.T) {
	if got := bridge.MsgID(7, 2, 1700000000000, 42); got != "7-2-1700000000000-42" {
		t.Errorf("MsgID = %q", got)
	}
}
