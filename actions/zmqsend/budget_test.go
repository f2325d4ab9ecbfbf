package zmqsend_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"context"
	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
)

// openFiles counts this process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("no /proc/self/fd (the test counts open files there): %v", err)
	}
	return len(ents)
}

// settledJunk is how many of the junk endpoints' hints are over: expired
// while retrying (nobody listens) or refused for the budget.
func settledJunk(p *zmqsend.Pool, junk map[string]bool) int {
	n := 0
	for ep, st := range p.Stats() {
		if junk[ep] {
			n += int(st.Dropped[actions.DropExpired] + st.Dropped[actions.DropBudget] + st.Sent)
		}
	}
	return n
}

// TestBudgetJunkEndpointsThenRealWorker is issue 19's scenario: 1,100
// endpoints where nobody listens each get a hint, then a real worker
// joins. Before the budget, ZeroMQ refused the 1,024th socket ("too many
// open files") and the real worker got nothing. With the default budget
// every junk endpoint fits; with a budget of 256 the idle junk senders
// are closed to make room. Either way the real worker receives every
// hint and the process stays within FilesFor of its budget.
func TestBudgetJunkEndpointsThenRealWorker(t *testing.T) {
	for _, budget := range []int{zmqsend.DefaultMaxEndpoints, 256} {
		t.Run(fmt.Sprint("max=", budget), func(t *testing.T) {
			before := openFiles(t)
			p := newPool(t, zmqsend.WithMaxEndpoints(budget), zmqsend.WithIdleClose(0))
			junk := map[string]bool{}
			peak := 0
			for i := range 1100 {
				ep := fmt.Sprintf("tcp://127.0.0.1:%d", 21000+i)
				junk[ep] = true
				// A short life: an expired hint leaves its sender idle, and
				// so closable for the budget.
				err := p.Send(ep, hint(i, 30*time.Millisecond))
				if err != nil && !(budget < 1100 && errors.Is(err, actions.ErrBudget)) {
					t.Fatalf("junk endpoint %d: %v", i+1, err)
				}
				if i%100 == 0 {
					peak = max(peak, openFiles(t))
				}
			}
			natstest.Eventually(t, 20*time.Second, func() bool {
				peak = max(peak, openFiles(t))
				return settledJunk(p, junk) == 1100
			}, "junk hints to settle")
			ep, ch := puller(t, "tcp://127.0.0.1:*")
			for i := range 200 {
				if err := p.Send(ep, hint(i, 10*time.Second)); err != nil {
					t.Fatalf("real worker hint %d: %v", i, err)
				}
			}
			receive(t, ch, 200, 10*time.Second)
			peak = max(peak, openFiles(t))
			b := p.Budget()
			if b.Open > budget {
				t.Fatalf("%d senders open, budget %d", b.Open, budget)
			}
			if limit := before + int(zmqsend.FilesFor(budget, 0)) - zmqsend.FileReserve; peak > limit {
				t.Fatalf("peak %d open files, budget allows %d above the %d before", peak, limit-before, before)
			}
			if budget < 1100 && b.Evicted == 0 {
				t.Fatalf("budget %d with 1,101 endpoints evicted nothing: %+v", budget, b)
			}
			t.Logf("budget %d: peak %d open files (%d before), %+v", budget, peak, before, b)
		})
	}
}

func TestBudgetEvictsLeastRecentlyUsedIdle(t *testing.T) {
	p := newPool(t, zmqsend.WithMaxEndpoints(3), zmqsend.WithIdleClose(0))
	var eps []string
	var chs []<-chan []byte
	for range 4 {
		ep, ch := puller(t, "tcp://127.0.0.1:*")
		eps, chs = append(eps, ep), append(chs, ch)
	}
	for i, ep := range eps[:3] {
		if err := p.Send(ep, hint(i, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
		receive(t, chs[i], 1, 5*time.Second)
	}
	// eps[0] is used again: eps[1] is now the least recently used.
	if err := p.Send(eps[0], hint(9, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, chs[0], 1, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool {
		for _, st := range p.Stats() {
			if st.QueueDepth != 0 {
				return false
			}
		}
		return true
	}, "senders idle")
	if err := p.Send(eps[3], hint(3, 5*time.Second)); err != nil {
		t.Fatalf("fourth endpoint with a full budget of idle senders: %v", err)
	}
	receive(t, chs[3], 1, 5*time.Second)
	want := []string{eps[0], eps[2], eps[3]}
	slices.Sort(want)
	if got := p.Endpoints(); !slices.Equal(got, want) {
		t.Fatalf("open senders %v, want %v (eps[1] evicted)", got, want)
	}
	if b := p.Budget(); b.Evicted != 1 || b.Open != 3 {
		t.Fatalf("budget %+v, want 1 evicted and 3 open", b)
	}
	// The evicted endpoint comes back on its next hint.
	if err := p.Send(eps[1], hint(1, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, chs[1], 1, 5*time.Second)
}

func TestBudgetFullOfBusySendersRefusesNewEndpoint(t *testing.T) {
	p := newPool(t, zmqsend.WithMaxEndpoints(2), zmqsend.WithIdleClose(0))
	for i := range 2 {
		// Nobody listens: the hints retry until their deadline, busy.
		if err := p.Send(downEndpoint(t), hint(i, time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	third := downEndpoint(t)
	err := p.Send(third, hint(2, time.Minute))
	if !errors.Is(err, actions.ErrBudget) {
		t.Fatalf("third endpoint: %v, want ErrBudget", err)
	}
	if got := p.Stats()[third].Dropped[actions.DropBudget]; got != 1 {
		t.Fatalf("dropped for budget: %d, want 1", got)
	}
}

func TestBudgetNeverEvictsKeptEndpoint(t *testing.T) {
	pin, pinCh := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t, zmqsend.WithMaxEndpoints(1), zmqsend.WithIdleClose(20*time.Millisecond), zmqsend.WithKeep(pin))
	if err := p.Send(pin, hint(0, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, pinCh, 1, 5*time.Second)
	for i := range 3 {
		ep, ch := puller(t, "tcp://127.0.0.1:*")
		if err := p.Send(ep, hint(i, 5*time.Second)); err != nil {
			t.Fatalf("worker %d with the pin endpoint open: %v", i, err)
		}
		receive(t, ch, 1, 5*time.Second)
	}
	// Idle closing takes the worker's sender, never the pin endpoint's.
	natstest.Eventually(t, 5*time.Second, func() bool {
		return len(p.Endpoints()) == 1
	}, "idle worker sender closed")
	if got := p.Endpoints(); !slices.Equal(got, []string{pin}) {
		t.Fatalf("open senders %v, want only the pin endpoint", got)
	}
	if b := p.Budget(); b.IdleClosed == 0 {
		t.Fatalf("budget %+v: nothing closed for idleness", b)
	}
}

func TestIdleCloseReopensOnNextHint(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t, zmqsend.WithIdleClose(30*time.Millisecond))
	if err := p.Send(ep, hint(0, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool { return len(p.Endpoints()) == 0 }, "idle sender closed")
	if err := p.Send(ep, hint(1, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, ch, 1, 5*time.Second); got[0] != "h-1" {
		t.Fatalf("got %q after reopening", got)
	}
	// The sender counts a hint after the peer may already hold it.
	natstest.Eventually(t, 5*time.Second, func() bool { return p.Stats()[ep].Sent == 2 },
		"sent 2 (stats survive closing for idleness)")
}

func TestForgetDropsStats(t *testing.T) {
	ep, ch := puller(t, "tcp://127.0.0.1:*")
	p := newPool(t)
	if err := p.Send(ep, hint(0, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool { return p.Stats()[ep].Sent == 1 }, "sent count")
	p.Forget(ep)
	st := p.Stats()
	if _, ok := st[ep]; ok {
		t.Fatal("stats of a forgotten endpoint still listed")
	}
	if st[zmqsend.DepartedEndpoint].Sent != 1 {
		t.Fatalf("departed endpoints: %+v, want the forgotten endpoint's 1 sent", st[zmqsend.DepartedEndpoint])
	}
	// Forgetting another adds up; the sum over endpoints never goes down.
	ep2, ch2 := puller(t, "tcp://127.0.0.1:*")
	for i := range 2 {
		if err := p.Send(ep2, hint(i, 5*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, ch2, 2, 5*time.Second)
	natstest.Eventually(t, 5*time.Second, func() bool { return p.Stats()[ep2].Sent == 2 }, "sent count")
	p.Forget(ep2)
	if st := p.Stats(); len(st) != 1 || st[zmqsend.DepartedEndpoint].Sent != 3 {
		t.Fatalf("stats after forgetting both: %+v", st)
	}
}

func TestFilesFor(t *testing.T) {
	if err := zmqsend.ValidateMaxEndpoints(0); err == nil {
		t.Fatal("budget 0 accepted")
	}
	if err := zmqsend.ValidateMaxEndpoints(zmqsend.MaxEndpointsLimit + 1); err == nil {
		t.Fatal("budget past the limit accepted")
	}
	if got := zmqsend.FilesFor(4096, 1); got != 2*(4096+1+64+512)+zmqsend.FileReserve {
		t.Fatalf("FilesFor(4096, 1) = %d", got)
	}
	// The test process can always have what it already has.
	cur, err := zmqsend.EnsureFileLimit(64)
	if err != nil || cur < 64 {
		t.Fatalf("EnsureFileLimit(64) = %d, %v", cur, err)
	}
	_, err = zmqsend.EnsureFileLimit(1 << 40)
	if os.Geteuid() != 0 && !errors.Is(err, zmqsend.ErrFileLimit) {
		t.Fatalf("EnsureFileLimit(2^40) = %v, want ErrFileLimit", err)
	}
}

// Values an option cannot take fail NewPool, each named, rather than be
// ignored.
func TestNewPoolRejectsInvalidOptions(t *testing.T) {
	for _, opt := range []zmqsend.PoolOption{zmqsend.WithQueueSize(0), zmqsend.WithMaxHeld(-1),
		zmqsend.WithSettleDelay(-time.Millisecond), zmqsend.WithIdleClose(-time.Second),
		zmqsend.WithMaxEndpoints(0), zmqsend.WithMaxEndpoints(zmqsend.MaxEndpointsLimit + 1)} {
		p, err := zmqsend.NewPool(opt)
		if !errors.Is(err, zmqsend.ErrInvalidOption) || p != nil {
			t.Errorf("pool %v, err %v: want ErrInvalidOption", p, err)
		}
	}
	p, err := zmqsend.NewPool(zmqsend.WithQueueSize(1), zmqsend.WithMaxHeld(zmqsend.NoMaxHeld), zmqsend.WithIdleClose(0))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("closing a pool that never sent: %v", err)
	}
}
