package pypeer

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// The replay side answers as vLLM's _service_replay does: every buffered
// batch from the asked seq on, then END_SEQ with an empty payload.
func TestEnginePubReplay(t *testing.T) {
	e := StartEnginePub(t)
	_, rep := e.Endpoints()
	skipped := e.Skip(4) // buffered, never sent on PUB
	for i, b := range skipped {
		// Even seqs in the tagged-map form, odd ones in the array form.
		if b.Seq != uint64(i) || (i%2 == 0) != (b.Payload[0]&0xf0 == 0x80) {
			t.Fatalf("batch %d: seq %d, first byte 0x%02x", i, b.Seq, b.Payload[0])
		}
	}

	d, err := zmq.NewSocket(zmq.DEALER)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.SetLinger(0); err != nil {
		t.Fatal(err)
	}
	if err := d.SetRcvtimeo(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := d.Connect(rep); err != nil {
		t.Fatal(err)
	}
	if _, err := d.SendMessage([]byte{}, binary.BigEndian.AppendUint64(nil, 2)); err != nil {
		t.Fatal(err)
	}
	for _, want := range append(skipped[2:], Batch{Seq: 1<<64 - 1}) {
		m, err := d.RecvMessageBytes(0)
		if err != nil {
			t.Fatalf("waiting for seq %d: %v", want.Seq, err)
		}
		if len(m) != 3 || len(m[0]) != 0 || binary.BigEndian.Uint64(m[1]) != want.Seq || !bytes.Equal(m[2], want.Payload) {
			t.Fatalf("got %d frames %q, want [\"\", seq %d, its payload]", len(m), m, want.Seq)
		}
	}
	if n := e.ReplayRequests(); n != 1 {
		t.Errorf("ReplayRequests = %d, want 1", n)
	}
}
