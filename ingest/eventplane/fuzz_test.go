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
