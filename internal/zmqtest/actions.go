package zmqtest

import (
	"testing"

	zmq "github.com/pebbe/zmq4"

	"github.com/hintstream/hintstream/schemas"
)

// PullPayloads binds a real PULL socket on 127.0.0.1 and hands the
// payload of every one-action KvHintsEnvelope it receives to decode; it
// returns the endpoint.
func PullPayloads(t testing.TB, decode func(payload []byte)) string {
	t.Helper()
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	return Serve(t, sock, "tcp://127.0.0.1:*", func(b []byte) {
		var env schemas.KvHintsEnvelope
		if _, err := env.UnmarshalMsg(b); err == nil && len(env.Actions) == 1 {
			decode(env.Actions[0].Payload)
		}
	})
}

// PinSink stands in for the Mooncake master and collects the pin
// payloads it receives.
func PinSink(t testing.TB) (string, <-chan schemas.PinPayload) {
	t.Helper()
	out := make(chan schemas.PinPayload, 64)
	ep := PullPayloads(t, func(b []byte) {
		var p schemas.PinPayload
		if _, err := p.UnmarshalMsg(b); err == nil {
			out <- p
		}
	})
	return ep, out
}
