// Package natstest starts real embedded JetStream servers for tests and
// waits on conditions with deadlines instead of sleeping.
package natstest

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/hintstream/hintstream/internal/race"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Start runs a JetStream server on a free loopback port with its store in
// t.TempDir(), shut down at the end of the test.
func Start(t testing.TB) *server.Server {
	t.Helper()
	return StartIn(t, t.TempDir())
}

// StartIn is Start with a chosen store directory (to restart on the same
// data).
func StartIn(t testing.TB, dir string) *server.Server {
	t.Helper()
	s, err := natsembed.Start(natsembed.Options{StoreDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// Connect opens a client connection and a JetStream context on s, closed
// at the end of the test.
func Connect(t testing.TB, s *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), nats.Timeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// ScaleEnv names the variable that sets the factor Within stretches test
// deadlines by (a number of at least 1), for a machine slower than the
// default allows for.
const ScaleEnv = "HINTSTREAM_TEST_DEADLINE_SCALE"

// scale is the factor Within applies. A test's deadline is what one run
// on a quiet machine needs, with room to spare; `make test` runs dozens
// of test binaries side by side on two cores, perhaps beside other work,
// and the race detector slows a program several times over. A deadline
// only bounds how long a failing test takes to say so, so the default is
// generous: 2, and 4 under -race.
var scale = sync.OnceValue(func() float64 {
	f, err := parseScale(os.Getenv(ScaleEnv), race.Enabled)
	if err != nil {
		panic(err)
	}
	return f
})

// parseScale reads ScaleEnv's value v; empty is the default.
func parseScale(v string, raceOn bool) (float64, error) {
	if v == "" {
		if raceOn {
			return 4, nil
		}
		return 2, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f >= 1) || math.IsInf(f, 1) {
		return 0, fmt.Errorf("%s=%q: want a number of at least 1", ScaleEnv, v)
	}
	return f, nil
}

// Within is deadline d stretched for how slow this run may be (see
// scale): every wait on a condition in a test takes its deadline from
// here, so that one factor holds for the whole suite.
func Within(d time.Duration) time.Duration {
	return time.Duration(float64(d) * scale())
}

// Eventually polls cond every few milliseconds until it holds or the
// deadline (within, stretched by Within) passes, then fails the test with
// msg.
func Eventually(t testing.TB, within time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	within = Within(within)
	deadline := time.Now().Add(within)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v: "+msg, append([]any{within}, args...)...)
		}
		<-tick.C
	}
}

// Run runs a part's Run(ctx) on its own goroutine until the returned
// stop, which cancels it and waits for it to return (an error fails the
// test); the test's cleanup stops it if the test did not.
func Run(t testing.TB, run func(context.Context) error) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// Messages returns every message a stream holds, in order (for tests
// that check what was stored).
func Messages(t testing.TB, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Within(5*time.Second))
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
