package index

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// An engine batch's unknown medium decodes to the tier "medium:<name>"
// (kvevents.TestDecodeEngineBatchMedium), which the index counts and ignores.
func TestDecodedUnknownMedium(t *testing.T) {
	for _, m := range []string{"TPU", "gpu"} {
		ev := kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: 1}, Kind: schemas.KindRemoved,
			Tier: schemas.StorageTier("medium:" + m), Removed: []uint64{1}}
		if err := New().Apply(ev); !errors.Is(err, ErrUnknownTier) {
			t.Errorf("medium %q: Apply = %v, want ErrUnknownTier", m, err)
		}
	}
}

func TestFromRouterEventNilRejected(t *testing.T) {
	if err := New().Apply(kvevents.FromRouterEvent(nil)); !errors.Is(err, ErrBadEvent) {
		t.Fatalf("Apply(FromRouterEvent(nil)) = %v, want ErrBadEvent", err)
	}
}
