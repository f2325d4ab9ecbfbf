package engine

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/schemas"
)

// FuzzRouted: any bytes on a router's active_sequences_events subject end
// in an outcome, never a panic: acked, or refused with a *DecodeError
// whose reason is counted (the frame's decoding, or an unknown worker);
// a hint goes only to a registered worker's endpoint.
func FuzzRouted(f *testing.F) {
	for _, name := range []string{"seq_add_nats", "seq_add_legacy", "seq_add_untracked_lora", "seq_batch_zmq"} {
		b, err := os.ReadFile("../../ingest/eventplane/testdata/" + name + ".msgpack")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x85})
	const subject = "namespace.dynamo.component.backend.endpoint.generate.active_sequences_events"
	reg := registry{7: {WorkerID: 7, Model: "m", KvBlockSize: 16, HintEndpoints: []string{"tcp://127.0.0.1:7"}}}
	at := time.UnixMilli(1764547200000 + 100)
	f.Fuzz(func(t *testing.T, data []byte) {
		sent := &sentHints{}
		e, err := NewEngine(Decisions{}, EngineDeps{Index: index.New(), Workers: reg, Sender: sent, Counters: metrics.New(),
			Clock: func() time.Time { return at }})
		if err != nil {
			t.Fatal(err)
		}
		o := e.Request(context.Background(), Delivery{Time: at, Delivered: 1}, Message{Subject: subject, Data: data})
		switch o.Verdict {
		case Ack:
		case Reject:
			var de *schemas.DecodeError
			if !errors.As(o.Err, &de) || de.Reason == "" {
				t.Fatalf("refused with %v, not a DecodeError with a reason", o.Err)
			}
		default:
			t.Fatalf("outcome %+v", o)
		}
		for _, h := range sent.take() {
			if h.endpoint != "tcp://127.0.0.1:7" {
				t.Fatalf("hint to %s", h.endpoint)
			}
		}
	})
}
