package receiver

import (
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
)

// FuzzDecode: any input is decoded or rejected with ErrInvalid, never a
// panic, and an accepted envelope's known actions carry their payload.
func FuzzDecode(f *testing.F) {
	f.Add(testvectors.Read(f, "kv_hints_envelope.msgpack"))
	f.Add(envelope("kv.pin", pinPayload(func(map[string]any) {})))
	f.Add([]byte{0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		env, err := Decode(b)
		if err != nil {
			return
		}
		for _, a := range env.Actions {
			if a.Type == ActionPin && a.Version == PinVersion && a.Pin == nil {
				t.Fatal("kv.pin@1.0 accepted without its payload")
			}
			if a.Type == ActionPrefetch && a.Version == PrefetchVersion && a.Prefetch == nil {
				t.Fatal("kv.prefetch@1.0 accepted without its payload")
			}
		}
	})
}
