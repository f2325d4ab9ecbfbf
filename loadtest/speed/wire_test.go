package speed

import (
	"os"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
)

func TestRequestTemplateEqualsGeneratedCodec(t *testing.T) {
	ev := schemas.RequestEvent{RequestID: "run-12345", SessionID: "s7", Model: loadModel, TokenIDs: makePrompts(1, 2048)[0],
		Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}, ReceivedAtMs: 1764470000123}
	want, err := ev.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := newRequestTemplate(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := tpl.encode(ev.RequestID, ev.ReceivedAtMs); string(got) != string(want) {
		t.Fatalf("spliced encoding differs from MarshalMsg:\n%x\n%x", got, want)
	}
}

func TestHintRequestID(t *testing.T) {
	env, err := actions.NewPrefetchEnvelope(actions.Prefetch{RequestID: "run-42", Model: "m", TokenIDs: []uint32{1, 2, 3},
		ExpiresAt: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := actions.EncodeEnvelope(env)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := hintRequestID(b); !ok || id != "run-42" {
		t.Fatalf("request id %q, %v", id, ok)
	}
	for _, bad := range [][]byte{nil, {0xc1}, b[:len(b)/2], {0x80}} {
		if id, ok := hintRequestID(bad); ok {
			t.Fatalf("%x gave request id %q", bad, id)
		}
	}
}

func TestCPUTimeOfThisProcess(t *testing.T) {
	before := cpuTime(os.Getpid())
	if before <= 0 {
		t.Fatalf("CPU time %v after building and starting a test binary", before)
	}
	// Burn CPU until /proc (10 ms ticks) shows 30 ms more.
	x := uint64(1)
	for deadline := time.Now().Add(10 * time.Second); cpuTime(os.Getpid()) < before+30*time.Millisecond; {
		for range 100000 {
			x = mix(x)
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stuck at %v (x %d)", cpuTime(os.Getpid()), x)
		}
	}
	if cpuTime(-1) != 0 {
		t.Fatal("a missing process has CPU time")
	}
}
