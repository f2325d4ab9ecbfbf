package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/streams"
)

// BenchmarkWakeupToHint publishes one wake-up at a time and waits for its
// kv.prefetch at a real PULL socket: one op is the whole path, JetStream
// publish to ZMQ receipt. Reports p50 and p99 in µs.
//
//	go test -run '^$' -bench WakeupToHint -benchtime 2000x ./loadtest/
func BenchmarkWakeupToHint(b *testing.B) {
	c := startCluster(b, service.Config{}, 1)
	ctx := context.Background()
	prompt := make([]uint32, 2048)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body, _ := json.Marshal(schemas.RequestEvent{RequestID: fmt.Sprintf("bench-%d", i), Model: "m",
			TokenIDs: prompt, Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
		// By hand, not through client.Publisher: the figure (README,
		// RESULTS.md) times publish → hint, without encoding the event.
		t0 := time.Now()
		if _, err := c.js.Publish(ctx, streams.RequestSubject("m"), body); err != nil {
			b.Fatal(err)
		}
		c.wait(b, 1, 5*time.Second)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
