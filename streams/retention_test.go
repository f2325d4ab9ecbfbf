package streams

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPurgeCoveredKeepsRecentAndUncovered: a purge removes only messages
// both covered and older than keep; it refuses a foreign stream.
func TestPurgeCoveredKeepsRecentAndUncovered(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	ctx := context.Background()
	if _, _, err := Ensure(ctx, js, Config{Name: "OURS", Subjects: []string{"ours.>"}}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := js.Publish(ctx, "ours.x", []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, "OURS")
	if err != nil {
		t.Fatal(err)
	}
	created := st.CachedInfo().Created
	// All ten are newer than an hour ago: nothing goes.
	if p, err := PurgeCovered(ctx, js, "OURS", created, 5, time.Hour, time.Now()); err != nil || p.Messages != 0 {
		t.Fatalf("recent messages purged: %+v %v", p, err)
	}
	// All are older than keep, but only 1..5 are covered.
	// A snapshot of another incarnation of the stream covers nothing here.
	if p, err := PurgeCovered(ctx, js, "OURS", created.Add(-time.Second), 5, time.Second, time.Now().Add(time.Minute)); !errors.Is(err, ErrStreamChanged) || p.Messages != 0 {
		t.Fatalf("older incarnation's snapshot: %+v %v, want ErrStreamChanged and nothing purged", p, err)
	}
	p, err := PurgeCovered(ctx, js, "OURS", created, 5, time.Second, time.Now().Add(time.Minute))
	if err != nil || p.KeptFrom != 6 || p.Messages != 5 {
		t.Fatalf("purge: %+v %v, want kept from 6, 5 purged", p, err)
	}
	cut := time.Now()
	natstest.Eventually(t, 5*time.Second, func() bool { return time.Now().After(cut.Add(10 * time.Millisecond)) }, "clock moves")
	for range 3 {
		if _, err := js.Publish(ctx, "ours.x", []byte("e")); err != nil {
			t.Fatal(err)
		}
	}
	// Everything covered; only 6..10 are older than the cut.
	p, err = PurgeCovered(ctx, js, "OURS", created, 13, time.Since(cut.Add(5*time.Millisecond)), time.Now())
	if err != nil || p.KeptFrom != 11 || p.Messages != 5 {
		t.Fatalf("purge by age: %+v %v, want kept from 11, 5 purged", p, err)
	}

	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "THEIRS", Subjects: []string{"theirs.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "theirs.x", []byte("e")); err != nil {
		t.Fatal(err)
	}
	if _, err := PurgeCovered(ctx, js, "THEIRS", time.Time{}, 1, 0, time.Now().Add(time.Hour)); !errors.Is(err, ErrForeignStream) {
		t.Fatalf("foreign stream: err %v, want ErrForeignStream", err)
	}
}
