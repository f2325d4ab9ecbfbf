package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/registry"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/streams"
	zmq "github.com/pebbe/zmq4"
)

// BenchmarkWakeupToHint publishes one wake-up at a time and waits for its
// kv.prefetch at a real PULL socket: one op is the whole path, JetStream
// publish to ZMQ receipt. Reports p50 and p99 in µs.
//
//	go test -run '^$' -bench WakeupToHint -benchtime 2000x ./loadtest/
func BenchmarkWakeupToHint(b *testing.B) {
	srv := natstest.Start(b)
	_, js := natstest.Connect(b, srv)
	ctx := context.Background()
	svc := service.New(service.Config{NATSURL: srv.ClientURL()})
	if err := svc.Start(ctx); err != nil {
		b.Fatal(err)
	}
	defer svc.Stop(ctx)

	pull, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		b.Fatal(err)
	}
	defer pull.Close()
	_ = pull.SetRcvtimeo(5 * time.Second)
	_ = pull.SetLinger(0)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		b.Fatal(err)
	}
	ep, _ := pull.GetLastEndpoint()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		b.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{ep}}); err != nil {
		b.Fatal(err)
	}
	natstest.Eventually(b, 10*time.Second, func() bool { return len(svc.Registry().Workers()) == 1 },
		"worker registered")

	prompt := make([]uint32, 2048)
	for i := range prompt {
		prompt[i] = uint32(i)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body, _ := json.Marshal(schemas.RequestEvent{RequestID: fmt.Sprintf("bench-%d", i), Model: "m",
			TokenIDs: prompt, Headers: map[string]string{"x-dynamo-experimental-wakeup": "1"}})
		t0 := time.Now()
		if _, err := js.Publish(ctx, streams.RequestSubject("m"), body); err != nil {
			b.Fatal(err)
		}
		if _, err := pull.RecvBytes(0); err != nil {
			b.Fatalf("hint %d not received: %v", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
