package eventplane

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// FuzzDecodeFrame: whatever the bytes, the decoders return an event, an
// ignore reason or a DecodeError, never panic, and respect the limits.
func FuzzDecodeFrame(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.msgpack")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
			f.Add(b[:len(b)/2])
		}
	}
	f.Add([]byte{0x85})
	lim := schemas.Limits{MaxBytes: 1 << 16, MaxTokens: 64, MaxString: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeKVEvent(data, lim)
		switch {
		case err != nil:
			if !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
		case fr.Event == nil:
			t.Fatal("no event and no error")
		case fr.Ignored == "":
			if s := fr.Event.Event.Data.Stored; s != nil && len(s.Blocks) > lim.MaxTokens {
				t.Fatalf("%d blocks over the limit", len(s.Blocks))
			}
			if !fr.Event.Tier().Valid() || fr.Event.Event.Data.Kind == 0 {
				t.Fatalf("invalid event accepted: %+v", fr.Event)
			}
		}
		if _, _, err := DecodeLoad(data, lim); err != nil && !errors.Is(err, schemas.ErrMalformed) {
			t.Fatalf("load error %v is not ErrMalformed", err)
		}
	})
}

// FuzzDecodeActiveSequences: whatever the bytes, the active-sequence
// decoder returns events that hold what Dynamo requires (a request id, a
// known variant, AddRequest fields only on an AddRequest) within the
// limits, or a DecodeError; never a panic.
func FuzzDecodeActiveSequences(f *testing.F) {
	files, _ := filepath.Glob("testdata/seq_*.msgpack")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
			f.Add(b[:len(b)-len(b)/3])
		}
	}
	lim := schemas.Limits{MaxBytes: 1 << 16, MaxTokens: 64, MaxString: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		fr, err := DecodeActiveSequences(data, lim)
		if err != nil {
			if !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if len(fr.Events) == 0 && !fr.Batch || len(fr.Events) > lim.MaxTokens {
			t.Fatalf("%d events (batch %v)", len(fr.Events), fr.Batch)
		}
		for _, ev := range fr.Events {
			switch {
			case ev.RequestID == "" || len(ev.RequestID) > lim.MaxString:
				t.Fatalf("request id %q", ev.RequestID)
			case ev.Kind < SequenceAdd || ev.Kind > SequenceFree:
				t.Fatalf("kind %d", ev.Kind)
			case (ev.Kind == SequenceAdd) != (ev.Add != nil):
				t.Fatalf("%v with Add %v", ev.Kind, ev.Add)
			case ev.Add != nil && len(ev.Add.SequenceHashes) > lim.MaxTokens:
				t.Fatalf("%d hashes", len(ev.Add.SequenceHashes))
			}
		}
	})
}

// FuzzParseZMQ: a ZMQ event-plane message (four frames cut from the fuzz
// input) parses to an envelope that agrees with its frames, or to a
// DecodeError; never a panic.
func FuzzParseZMQ(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.msgpack")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			env, err := DecodeEnvelope(b, schemas.Limits{})
			if err != nil {
				continue
			}
			var in []byte
			in = append(in, byte(len(env.Topic)))
			in = append(in, env.Topic...)
			in = binary.BigEndian.AppendUint64(in, env.PublisherID)
			in = binary.BigEndian.AppendUint64(in, env.Sequence)
			f.Add(AppendZMQFrame(in, b))
		}
	}
	lim := schemas.Limits{MaxBytes: 1 << 16, MaxTokens: 64, MaxString: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		// [topic length][topic][8][8][frame...]
		if len(data) < 1 || len(data) < 1+int(data[0])+16 {
			return
		}
		n := int(data[0])
		frames := [][]byte{data[1 : 1+n], data[1+n : 9+n], data[9+n : 17+n], data[17+n:]}
		m, err := ParseZMQ(frames, lim)
		if err != nil {
			if !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("error %v is not ErrMalformed", err)
			}
			return
		}
		if m.Envelope.PublisherID != binary.BigEndian.Uint64(frames[1]) || m.Envelope.Sequence != binary.BigEndian.Uint64(frames[2]) {
			t.Fatalf("envelope %+v disagrees with its frames", m.Envelope)
		}
		if _, err := DecodeEnvelope(m.Raw, lim); err != nil {
			t.Fatalf("raw envelope does not decode: %v", err)
		}
	})
}
