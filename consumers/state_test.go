package consumers

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStateShardsOrderAndApplied: with apply shards, every message is
// applied once, each subject's in publish order; a message still being
// applied keeps Applied at 0 though later ones (of the other shard) are
// done; once it is, Applied is the stream's last sequence, and every
// message was counted received.
func TestStateShardsOrderAndApplied(t *testing.T) {
	// Shards need 2 processors; the deferred call puts the old count back.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ST", Subjects: []string{"st.>"}}); err != nil {
		t.Fatal(err)
	}
	const subjects, per = 8, 75
	var last uint64
	for i := range per {
		for s := range subjects {
			ack, err := js.Publish(ctx, fmt.Sprintf("st.w%d", s), []byte(strconv.Itoa(i)))
			if err != nil {
				t.Fatal(err)
			}
			last = ack.Sequence
		}
	}
	var (
		mu   sync.Mutex
		seen = map[string][]int{}
		n    int
	)
	gate := make(chan struct{})
	apply := func(m jetstream.Msg) error {
		i, err := strconv.Atoi(string(m.Data()))
		if err != nil {
			return err
		}
		if m.Subject() == "st.w0" && i == per-1 {
			<-gate // the last of one subject waits
		}
		mu.Lock()
		defer mu.Unlock()
		seen[m.Subject()] = append(seen[m.Subject()], i)
		n++
		return nil
	}
	counters := metrics.New()
	c := NewStateConsumer(js, StateConfig{Kind: "kv_events", Stream: "ST", Shards: 2}, apply,
		NewDeadLetter(js, ""), counters, discard())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	// The gated message holds up the rest of its shard: the later
	// messages of subjects on that shard, which are in the last round.
	behind := 1
	for s := 1; s < subjects; s++ {
		if shardOf(fmt.Sprintf("st.w%d", s), 2) == shardOf("st.w0", 2) {
			behind++
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n == subjects*per-behind
	}, "all but the gated message and those behind it applied")
	if got := c.Applied(); got != 0 {
		t.Fatalf("Applied = %d while a message is being applied, want 0", got)
	}
	close(gate)
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.WaitCaughtUp(wctx); err != nil {
		t.Fatal(err)
	}
	if got := c.Applied(); got != last {
		t.Fatalf("Applied = %d, want the last sequence %d", got, last)
	}
	mu.Lock()
	defer mu.Unlock()
	for s := range subjects {
		got := seen[fmt.Sprintf("st.w%d", s)]
		if len(got) != per {
			t.Fatalf("st.w%d: %d applied, want %d", s, len(got), per)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("st.w%d: message %d applied as the %d-th", s, v, i)
			}
		}
	}
	if got := counters.State("kv_events").Received.Value(); got != subjects*per {
		t.Fatalf("received = %d, want %d", got, subjects*per)
	}
}
