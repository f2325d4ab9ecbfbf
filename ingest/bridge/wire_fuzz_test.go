package bridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"
)

// FuzzParseLive feeds parseLive the frames an engine's PUB socket could
// send. Property: no panic; either an error wrapping errMalformed, or a
// batch of exactly [topic, 8-byte seq <= MaxInt64, msgpack map or array].
// Interesting inputs are kept in testdata/fuzz/FuzzParseLive/.
func FuzzParseLive(f *testing.F) {
	seq := func(s uint64) []byte { return binary.BigEndian.AppendUint64(nil, s) }
	f.Add(uint8(3), []byte("kv-events"), seq(0), []byte{0x81, 0xa2, 't', 's', 0x01})
	f.Add(uint8(3), []byte{}, seq(7), []byte{0x93, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0, 0x90, 0xc0})
	f.Add(uint8(2), []byte{}, seq(1), []byte{0x80})             // two frames
	f.Add(uint8(3), []byte{}, []byte{0, 0, 0, 1}, []byte{0x80}) // short seq
	f.Add(uint8(3), []byte{}, seq(1<<63), []byte{0x80})         // seq out of range
	f.Add(uint8(3), []byte{}, seq(math.MaxUint64), []byte{0x80})
	f.Add(uint8(3), []byte{}, seq(1), []byte{0xc0}) // nil, not a batch
	f.Add(uint8(3), []byte{}, seq(1), []byte{})     // empty payload
	f.Add(uint8(4), []byte{}, seq(1), []byte{0x80}) // four frames
	f.Add(uint8(0), []byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, n uint8, topic, seqFrame, payload []byte) {
		all := [][]byte{topic, seqFrame, payload, payload}
		frames := all[:min(int(n)%5, len(all))]
		b, err := parseLive(frames)
		if err != nil {
			if !errors.Is(err, errMalformed) {
				t.Fatalf("error %v does not wrap errMalformed", err)
			}
			return
		}
		if len(frames) != 3 || len(seqFrame) != 8 {
			t.Fatalf("accepted %d frames with a %d-byte seq", len(frames), len(seqFrame))
		}
		if b.seq != binary.BigEndian.Uint64(seqFrame) || b.seq > math.MaxInt64 {
			t.Fatalf("seq %d from %x", b.seq, seqFrame)
		}
		if !bytes.Equal(b.payload, payload) || checkPayload(payload) != nil {
			t.Fatalf("payload %x accepted as %x", payload, b.payload)
		}
	})
}
