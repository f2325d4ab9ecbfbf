package service

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
)

// TestLifecycleStopsStagesInOrder: Stop cancels the parts stage by stage
// (a part of a later stage sees its context end only once every part of
// the earlier stages has returned), each drain sees Stop's ctx, and
// Stop returns once every part has.
func TestLifecycleStopsStagesInOrder(t *testing.T) {
	lc := newLifecycle()
	var mu sync.Mutex
	var order []int
	drained := make(chan context.Context, numStages)
	for st := numStages - 1; st >= 0; st-- { // launched in reverse: order must come from the stages
		lc.run(st, "part", func(ctx context.Context) error {
			<-ctx.Done()
			drained <- lc.drainContext()
			mu.Lock()
			order = append(order, st)
			mu.Unlock()
			return nil
		})
	}
	stopCtx := context.WithValue(context.Background(), drainKey{}, "stop")
	if err := lc.stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	want := make([]int, numStages)
	for i := range want {
		want[i] = i
	}
	if !slices.Equal(order, want) {
		t.Fatalf("stopped in order %v, want %v", order, want)
	}
	for range numStages {
		if d := <-drained; d.Value(drainKey{}) != "stop" {
			t.Fatal("a part drained under another context than Stop's")
		}
	}
}

type drainKey struct{}

// TestLifecycleFatalError: a part's error ends every part (Done closes),
// is Err's, and Stop afterwards still returns; a part handed over after
// its stage ended runs at once with an ended context.
func TestLifecycleFatalError(t *testing.T) {
	lc := newLifecycle()
	s := &Service{lc: lc}
	boom := errors.New("boom")
	other := make(chan struct{})
	lc.run(stageRequests, "requests", func(ctx context.Context) error { <-ctx.Done(); close(other); return nil })
	lc.run(stageSnapshots, "snapshotter", func(context.Context) error { return boom })
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a part's error did not end the service")
	}
	select {
	case <-other:
	case <-time.After(10 * time.Second):
		t.Fatal("the other part was not stopped")
	}
	if err := s.Err(); !errors.Is(err, boom) {
		t.Fatalf("Err = %v, want boom", err)
	}
	// Once the shutdown passed a stage, a part handed to it ends at once.
	natstest.Eventually(t, 10*time.Second, func() bool {
		st := &lc.stages[stageHTTP]
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.closed
	}, "the shutdown reached the last stage")
	ran := false
	lc.run(stageRequests, "late", func(ctx context.Context) error { ran = ctx.Err() != nil; return nil })
	if !ran {
		t.Fatal("a part handed over after its stage ended did not run with an ended context")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := lc.stop(ctx); !errors.Is(err, boom) {
		t.Fatalf("stop = %v, want boom", err)
	}
}
