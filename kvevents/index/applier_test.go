package index

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
)

// Events held for an unregistered worker own their memory: the decode
// memory a KV-event consumer reuses (a pooled kvevents.Decoder) is overwritten by the messages
// after them, and promoting the held events still indexes exactly what
// they said, chained on each other (a held event pointing into the
// scratch would index another worker's blocks, and its successor's
// parent would be unknown).
func TestHeldEventsOutliveTheDecodeScratch(t *testing.T) {
	for _, format := range []struct {
		name string
		msgs []kvevents.Message
	}{{"json", kvBenchMessages(t, 8)}, {"msgpack", kvEngineBenchMessages(8)}} {
		t.Run(format.name, func(t *testing.T) {
			ix := New()
			h := NewHolding(ix, HoldingConfig{}, nil)
			for id := uint64(2); id <= 4; id++ {
				h.Register(id, 1)
			}
			a := NewApplier(h, ApplierConfig{})
			d := &kvevents.Decoder{} // one for every message, as a pooled one usually is
			for i, m := range format.msgs {
				if err := decodeApply(a, d, m); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			if st := h.Stats(); st.Workers != 1 || st.Events != 2 {
				t.Fatalf("holding %+v, want worker 1's 2 events", st)
			}
			if n := h.Register(1, 1); n != 2 {
				t.Fatalf("promoted %d events, want 2", n)
			}
			if st := ix.Stats(); st.UnknownParent != 0 || st.Entries != 8*4 || st.Workers != 4 {
				t.Fatalf("index %+v, want 32 entries of 4 workers and no unknown parent", st)
			}
			if format.name != "msgpack" {
				return
			}
			// Worker 1's two batches (messages 0 and 4) are one prompt.
			var prompt []uint32
			for _, i := range []int{0, 4} {
				for tk := range 64 {
					prompt = append(prompt, uint32(i*7+tk*1000))
				}
			}
			got := ix.Overlap(kvevents.PromptHashes(prompt, 16))
			if got[kvevents.WorkerKey{WorkerID: 1}] != 8 {
				t.Fatalf("overlap %v, want worker 1 with all 8 blocks", got)
			}
		})
	}
}
