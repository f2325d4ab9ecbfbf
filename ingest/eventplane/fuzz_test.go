package eventplane

import (
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
