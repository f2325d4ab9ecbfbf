package pins

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/observe/metrics"
)

// dropSender takes every hint and sends nothing: the benchmark measures
// the budget's choice, not a socket.
type dropSender struct{}

func (dropSender) Send(string, actions.Hint) error { return nil }

// BenchmarkPinBudget: one new pin over a full budget among live pins
// (sub-benchmarks by their count), each releasing the one expected back
// last: the ranking of every live pin is the cost. "off" is the same
// pin without a budget, the baseline of the ratio.
func BenchmarkPinBudget(b *testing.B) {
	for _, live := range []int{100, 1000, 10000} {
		for _, on := range []bool{false, true} {
			name := strconv.Itoa(live) + "/off"
			if on {
				name = strconv.Itoa(live) + "/on"
			}
			b.Run(name, func(b *testing.B) {
				ctx := context.Background()
				slots := NewMemSlots()
				p := &Pinning{Endpoint: "inproc://bench", Slots: slots, Learner: tooltime.New(tooltime.DefaultConfig()),
					Sender: dropSender{}, Counters: metrics.New(), Log: discard()}
				tools := []string{"fetch", "build", "test", "search"}
				for i := range 256 {
					p.Learner.Observe(tools[i%4], time.Duration(1+i%60)*time.Second)
				}
				if on {
					p.BudgetTokens = int64(live) * 1000
				}
				now := time.Now()
				add := func(i int) {
					s := "s-" + strconv.Itoa(i)
					_, _ = slots.Put(ctx, s, PinRecord{Slot: "session:" + s, Trigger: "r-" + s})
					p.budgeted(ctx, &budgetPin{session: s, slot: "session:" + s, trigger: "r-" + s, tokens: 1000,
						tools: tools[i%4 : i%4+1], completed: now.Add(-time.Duration(i%90) * time.Second),
						expires: now.Add(time.Hour)}, now)
				}
				for i := range live {
					add(i)
				}
				b.ResetTimer()
				for i := range b.N {
					add(live + i)
				}
				if on && p.BudgetUsed() > p.BudgetTokens {
					b.Fatalf("used %d over the budget %d", p.BudgetUsed(), p.BudgetTokens)
				}
			})
		}
	}
}
