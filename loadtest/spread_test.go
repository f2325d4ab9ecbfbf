package loadtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/decide/engine"
	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
)

// BenchmarkBurstSpreading measures what burst spreading does to a burst of
// wake-ups for distinct, uncached prompts against equally loaded workers:
// the share of the burst that lands on the busiest worker (1.0 = all on
// one), with spreading off (the router's own choice) and on.
//
//	go test -run '^$' -bench BurstSpreading -benchtime 1x ./loadtest/
func BenchmarkBurstSpreading(b *testing.B) {
	const workers, burst = 4, 64
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("spread=%v", on), func(b *testing.B) {
			rc := routing.DefaultConfig()
			rc.Spread.Enabled = on
			var share float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				c := startCluster(b, service.Config{Decisions: engine.Decisions{Routing: &rc}}, workers)
				b.StartTimer()
				pub, err := client.NewPublisher(c.js)
				if err != nil {
					b.Fatal(err)
				}
				for j := 0; j < burst; j++ {
					prompt := make([]uint32, 512)
					for k := range prompt {
						prompt[k] = uint32(j<<16 + k)
					}
					if err := pub.PublishRequest(context.Background(), &schemas.RequestEvent{RequestID: fmt.Sprintf("burst-%d-%d", i, j),
						Model: "m", TokenIDs: prompt, Headers: map[string]string{schemas.HeaderWakeup: "1"}}); err != nil {
						b.Fatal(err)
					}
				}
				c.wait(b, burst, 20*time.Second)
				c.mu.Lock()
				top := 0
				for _, n := range c.received {
					top = max(top, n)
				}
				c.mu.Unlock()
				share = float64(top) / burst
			}
			b.ReportMetric(share, "busiest-share")
		})
	}
}
