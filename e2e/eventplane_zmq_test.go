package e2e

import (
	"context"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

// TestDynamoZMQEventPlane: Dynamo's default event plane (DYN_EVENT_PLANE
// zmq) end to end. Each of three workers' KV-event publishers, and one
// load publisher, binds its own ZMQ PUB socket as Dynamo's
// EventPublisher does (stand-ins in Python, internal/pypeer/dynamopub.py,
// sending frames built by the independent builder). `hintstream bridge
// --dynamo-zmq` with every endpoint puts them on JetStream; `run` with
// the same --dynamo-namespace/--dynamo-component reads them as it reads
// the NATS transport's, and a wake-up goes to the worker Dynamo's router
// would pick (the scenario of TestDynamoEventPlane's case A: device
// overlaps 2, 5, 7 and decode loads 1, 0, 4 make w202 the pick, which
// needs both the index and the load table). A skipped sequence of w202's
// publisher is an index gap, and the bridge counts it too; a message
// that breaks the ZMQ wire is refused by the bridge with its reason.
func TestDynamoZMQEventPlane(t *testing.T) {
	t.Parallel() // waits on processes more than it computes
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(90*time.Second))
	defer cancel()
	const ns, comp = "dyn-zmq", "backend"
	dyn := []string{"--dynamo-namespace", ns, "--dynamo-component", comp}

	workers := []uint64{101, 202, 303}
	kvPub := map[uint64]*pypeer.DynamoPub{}
	endpoints := []string{}
	for _, w := range workers {
		kvPub[w] = pypeer.StartDynamoPub(t)
		endpoints = append(endpoints, kvPub[w].Endpoint())
	}
	loadPub := pypeer.StartDynamoPub(t)
	endpoints = append(endpoints, loadPub.Endpoint())

	br := start(t, append([]string{"bridge", "--nats-url", srv.ClientURL(), "--log-format", "json", "--log-level", "info",
		"--dynamo-zmq", strings.Join(endpoints, ",")}, dyn...)...)
	br.waitLine(t, 20*time.Second, "bridging Dynamo's ZMQ event plane")
	for _, p := range []*pypeer.DynamoPub{kvPub[101], kvPub[202], kvPub[303], loadPub} {
		p.Await(2) // kv-events and kv_metrics, one SUB socket
	}

	sink := pypeer.StartSink(t, 3)
	eps := sink.Endpoints()
	kvb, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range workers {
		if err := registry.Put(ctx, kvb, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16,
			HintEndpoints: []string{eps[i]}}); err != nil {
			t.Fatal(err)
		}
	}

	promptA := seq(7000, 10*16)
	next := map[uint64]int{}
	kvFrame := func(w uint64, blocks int) map[string]any {
		sp := map[string]any{"kind": "kv", "namespace": ns, "component": comp, "worker": w,
			"event_id": next[w] + 1, "tier": "device", "tokens": promptA[:blocks*16], "block_size": 16,
			"publisher": 1<<40 + w, "sequence": next[w]}
		next[w]++
		return sp
	}
	send := func(p *pypeer.DynamoPub, topic string, specs ...map[string]any) {
		t.Helper()
		for _, f := range dynFrames(t, specs) {
			env, err := hex.DecodeString(f.Hex)
			if err != nil {
				t.Fatal(err)
			}
			p.Send(pypeer.DynamoFrame{Topic: topic, Envelope: env})
		}
	}
	for w, blocks := range map[uint64]int{101: 2, 202: 5, 303: 7} {
		send(kvPub[w], "kv-events", kvFrame(w, blocks))
	}
	send(loadPub, "kv_metrics",
		map[string]any{"kind": "load", "namespace": ns, "component": comp, "endpoint": "generate",
			"worker": 101, "decode": 1, "used": 100, "publisher": 1 << 41, "sequence": 0},
		map[string]any{"kind": "load", "namespace": ns, "component": comp, "endpoint": "generate",
			"worker": 303, "decode": 4, "used": 100, "publisher": 1 << 41, "sequence": 1})
	natstest.Eventually(t, 10*time.Second, func() bool {
		return streamMsgs(t, js, "KV_EVENTS") == 3 && streamMsgs(t, js, "KV_LOAD") == 2
	},
		"the bridge stored the ZMQ frames")

	p := start(t, append([]string{"run", "--nats-url", srv.ClientURL(), "--log-format", "json",
		"--http-addr", "127.0.0.1:0"}, dyn...)...)
	addr := httpAddr(t, p)
	p.waitLine(t, 30*time.Second, "hintstream running")
	publishRequest(t, ctx, js, wake("wake-A", "sess-A", promptA))
	sink.WaitFor(t, 5*time.Second, hasRequest("wake-A"), "prefetch for wake-A")
	var hinted []uint64
	for _, m := range byRequest(sink.Messages(), "wake-A") {
		hinted = append(hinted, workers[slices.Index(eps, m.Endpoint)])
	}
	if !slices.Equal(hinted, []uint64{202}) {
		t.Fatalf("wake-A hinted workers %v, want [202] (index and load from the ZMQ event plane)", hinted)
	}

	// w202's publisher skips a sequence: the bridge counts the gap and
	// the index marks it. A message with three frames is refused.
	next[202]++
	send(kvPub[202], "kv-events", kvFrame(202, 1))
	kvPub[202].Raw([][]byte{[]byte("kv-events"), make([]byte, 8), []byte("short")})
	natstest.Eventually(t, 10*time.Second, func() bool {
		m := scrape(t, addr)
		return series(m, "hintstream_index_gaps_total") == 1 && series(m, "hintstream_index_stale_workers") == 1
	}, "the skipped sequence counted as a gap by the index")
	br.waitLine(t, 10*time.Second, "gap in a Dynamo publisher's sequence")
	br.waitLine(t, 10*time.Second, "not four frames [topic, publisher_id, sequence, frame]")
	natstest.Eventually(t, 10*time.Second, func() bool {
		s, err := js.Stream(ctx, "HINTSTREAM_DLQ")
		if err != nil {
			return false
		}
		_, err = s.GetLastMsgForSubject(ctx, "hintstream.dlq.event_plane")
		return err == nil
	}, "dead-letter copy of the refused message")
	if m := lastMsg(t, ctx, js, "HINTSTREAM_DLQ", "hintstream.dlq.event_plane"); string(m.Data) != "short" ||
		m.Header.Get("Hintstream-Error") != "not four frames [topic, publisher_id, sequence, frame]" {
		t.Fatalf("dead-letter copy %q %v", m.Data, m.Header)
	}
	p.stop(t)
	br.stop(t)
}
