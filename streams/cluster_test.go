package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestEnsureReplicasAndPlacementOnCluster: on a real 3-node cluster, a
// set created with three replicas has them, a stream placed by tag lands
// on the tagged node, and every created stream carries the metadata that
// marks it as hintstream's (the purge's licence).
func TestEnsureReplicasAndPlacementOnCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	_, js := c.Connect(0)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()

	set := DefaultSet().Apply(Placement{Replicas: 3})
	set.Load.Name = "" // fewer streams, faster on a loaded machine
	set.DeadLetter.Name = ""
	if _, err := EnsureSet(ctx, js, set); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"LLM_REQUESTS", "LLM_RESPONSES", "KV_EVENTS"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := st.CachedInfo()
		if info.Config.Replicas != 3 {
			t.Errorf("%s: %d replicas, want 3", name, info.Config.Replicas)
		}
		if !CreatedByHintstream(info) {
			t.Errorf("%s: created without the %s metadata: %v", name, MetadataCreatedBy, info.Config.Metadata)
		}
		if name != "KV_EVENTS" && info.Config.MaxAge != DefaultRequestsMaxAge {
			t.Errorf("%s: max_age %v, want %v", name, info.Config.MaxAge, DefaultRequestsMaxAge)
		}
	}

	placed := Config{Name: "PLACED", Subjects: []string{"placed.>"}, Replicas: 1, PlacementTags: []string{"node:n2"}}
	if _, _, err := Ensure(ctx, js, placed); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, func() bool { return natstest.StreamLeader(ctx, js, "PLACED") == "n2" },
		"stream with placement tag node:n2 lives on n2 (leader %q)", natstest.StreamLeader(ctx, js, "PLACED"))

	// More replicas than servers is the server's refusal, passed on.
	tooMany := Config{Name: "TOO_MANY", Subjects: []string{"toomany.>"}, Replicas: 5}
	if _, _, err := Ensure(ctx, js, tooMany); err == nil {
		t.Error("R5 on three servers: no error")
	}
	if _, _, err := Ensure(ctx, js, Config{Name: "BAD", Subjects: []string{"bad.>"}, Replicas: 6}); !errors.Is(err, ErrBadPlacement) {
		t.Errorf("R6: err %v, want ErrBadPlacement", err)
	}
}

// TestForeignStreamNotMarked: a stream someone else created (Dynamo's)
// carries no hintstream metadata, and attaching does not add it.
func TestForeignStreamNotMarked(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DYN", Subjects: []string{"dyn.*"}}); err != nil {
		t.Fatal(err)
	}
	st, oc, err := Ensure(ctx, js, Config{Name: "DYN", Subjects: []string{"dyn.*"}})
	if err != nil || oc != Attached {
		t.Fatalf("attach: %v %v", oc, err)
	}
	if CreatedByHintstream(st.CachedInfo()) {
		t.Error("a foreign stream counts as hintstream's")
	}
}
