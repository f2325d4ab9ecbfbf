package loadtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
)

// BenchmarkClusterPublish stores 397-byte messages (the size of a 4-block
// RouterEvent) into a KV-event stream of 1 and of 3 replicas on the same
// in-process 3-node cluster, up to 1,024 acks in flight, and reports the stored
// rate: what one stream leader takes, and what replication costs, on this
// machine. R1 is the baseline of the same run.
//
//	go test -run '^$' -bench ClusterPublish -benchtime 100000x -count 3 ./loadtest/
func BenchmarkClusterPublish(b *testing.B) {
	c := natstest.StartCluster(b, 3)
	_, js := c.Connect(0)
	body := make([]byte, 397)
	for _, r := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", r), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			name := fmt.Sprintf("BENCH_R%d", r)
			cfg := streams.Config{Name: name, Subjects: []string{fmt.Sprintf("bench.r%d.*", r)}, Replicas: r}
			if _, _, err := streams.Ensure(ctx, js, cfg); err != nil {
				b.Fatal(err)
			}
			defer func() { _ = js.DeleteStream(context.Background(), name) }()
			subj := fmt.Sprintf("bench.r%d.7", r)
			b.SetBytes(int64(len(body)))
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, err := js.PublishAsync(subj, body); err != nil {
					b.Fatal(err)
				}
				if i%1024 == 1023 {
					<-js.PublishAsyncComplete()
				}
			}
			<-js.PublishAsyncComplete()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			st, err := js.Stream(ctx, name)
			if err != nil {
				b.Fatal(err)
			}
			if got := st.CachedInfo().State.Msgs; got != uint64(b.N) {
				b.Fatalf("stored %d of %d", got, b.N)
			}
		})
	}
}
