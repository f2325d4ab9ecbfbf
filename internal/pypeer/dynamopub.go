package pypeer

import (
	_ "embed"
	"encoding/hex"
	"testing"
)

//go:embed dynamopub.py
var dynamoPubScript []byte

// DynamoPub is a running dynamopub.py: a stand-in for one of Dynamo's
// ZMQ event-plane publishers (a PUB bound on loopback, sending
// [topic, publisher_id, sequence, header + envelope] as
// zmq_transport.rs does), driven command by command from the test.
type DynamoPub struct {
	p        *scriptProc
	endpoint string
}

// StartDynamoPub runs the publisher and waits until it is bound. It is
// stopped at test cleanup.
func StartDynamoPub(t testing.TB) *DynamoPub {
	t.Helper()
	var hello struct {
		Ready    bool   `json:"ready"`
		Endpoint string `json:"endpoint"`
	}
	p := startScript(t, "dynamopub", dynamoPubScript, &hello)
	if !hello.Ready {
		t.Fatalf("pypeer: dynamopub's first line is not its ready line; stderr:\n%s", p.stderr)
	}
	return &DynamoPub{p: p, endpoint: hello.Endpoint}
}

// Endpoint is the bound endpoint, e.g. "tcp://127.0.0.1:41234".
func (d *DynamoPub) Endpoint() string { return d.endpoint }

// Await waits until n subscriptions have reached the publisher (10 s at
// most) and returns their topics.
func (d *DynamoPub) Await(n int) []string {
	d.p.t.Helper()
	var out []string
	for _, s := range d.p.do(map[string]any{"await": n})["subscriptions"].([]any) {
		out = append(out, s.(string))
	}
	return out
}

// DynamoFrame is one message to send: its topic frame and the envelope
// (whose publisher_id and sequence the script reads for the id frames).
type DynamoFrame struct {
	Topic    string
	Envelope []byte
}

// Send sends the messages in order.
func (d *DynamoPub) Send(frames ...DynamoFrame) {
	d.p.t.Helper()
	items := make([]map[string]string, len(frames))
	for i, f := range frames {
		items[i] = map[string]string{"topic": f.Topic, "envelope": hex.EncodeToString(f.Envelope)}
	}
	d.p.do(map[string]any{"send": items})
}

// Raw sends each message's frames as they are.
func (d *DynamoPub) Raw(msgs ...[][]byte) {
	d.p.t.Helper()
	out := make([][]string, len(msgs))
	for i, m := range msgs {
		for _, f := range m {
			out[i] = append(out[i], hex.EncodeToString(f))
		}
	}
	d.p.do(map[string]any{"raw": out})
}
