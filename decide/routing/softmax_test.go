package routing

import (
	"fmt"
	"math"
	"testing"

	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// Logits 10, 12, 14, worked by hand as Dynamo's softmax_sample does:
// range = 14-10 = 4.
//
//	T=1:   scaled = -10/4, -12/4, -14/4 = -2.5, -3, -3.5; minus the max → 0, -0.5, -1
//	       exp → 1, 0.6065306597, 0.3678794412; sum 1.9744101009
//	       p   → 0.5064803911, 0.3071958857, 0.1863237232
//	T=0.5: scaled = -5, -6, -7 → 0, -1, -2 → 1, 0.3678794412, 0.1353352832; sum 1.5032147244
//	       p   → 0.6652409558, 0.2447284711, 0.0900305732
var (
	handLogits = []float64{10, 12, 14}
	handT1     = []float64{0.5064803911, 0.3071958857, 0.1863237232}
	handT05    = []float64{0.6652409558, 0.2447284711, 0.0900305732}
)

func TestSoftmaxProbsByHand(t *testing.T) {
	for _, c := range []struct {
		logits []float64
		temp   float64
		want   []float64
	}{
		{handLogits, 1, handT1},
		{handLogits, 0.5, handT05},
		{[]float64{7, 7, 7}, 1, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3}}, // equal: uniform
		{[]float64{-3}, 2, []float64{1}},
		// a constant shift changes nothing: range and differences are the same
		{[]float64{110, 112, 114}, 1, handT1},
	} {
		got := softmaxProbs(c.logits, c.temp)
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-9 {
				t.Errorf("logits %v T=%v: p = %v, want %v", c.logits, c.temp, got, c.want)
				break
			}
		}
	}
}

func TestSoftmaxSampleCumulative(t *testing.T) {
	// Cumulative at T=1: 0.50648, 0.81368, 1. The first index whose
	// cumulative sum reaches the draw (sample <= cumsum) wins.
	for _, c := range []struct {
		sample float64
		want   int
	}{{0, 0}, {0.5, 0}, {0.51, 1}, {0.81, 1}, {0.82, 2}, {0.9999999, 2}, {1, 2}, {1.5, 2}} {
		if got := softmaxSample(handLogits, 1, c.sample); got != c.want {
			t.Errorf("draw %v: index %d, want %d", c.sample, got, c.want)
		}
	}
}

// threeWorkers is a 160-token prompt (10 blocks of 16) over workers 1, 2
// and 3 holding 10, 8 and 6 of its blocks, none loaded:
//
//	w1: prefill (160-160)/16 = 0, decode 10 → 10
//	w2: prefill (160-128)/16 = 2, decode 10 → 12
//	w3: prefill (160-96)/16  = 4, decode 10 → 14
//
// the handLogits.
func threeWorkers(t testing.TB, opts ...Option) (*Selector, []uint32) {
	p := prompt(160)
	ix := index.New()
	for id, n := range map[uint64]int{1: 10, 2: 8, 3: 6} {
		store(t, ix, key(id, 0), p, 16, n)
	}
	ws := staticWorkers{worker(3, "m", 16, 1), worker(1, "m", 16, 1), worker(2, "m", 16, 1)} // order must not matter
	return mustSelector(NewSelector(ws, ix, NewLoadTable(), opts...)), p
}

func TestTemperatureZeroIsTheMinimum(t *testing.T) {
	s, p := threeWorkers(t)
	for i := range 100 {
		got, err := s.Select(&schemas.RequestEvent{RequestID: fmt.Sprint("z-", i), Model: "m", TokenIDs: p})
		if err != nil || got.Worker != key(1, 0) || got.Logit != 10 {
			t.Fatalf("got %+v, %v; want worker 1 with logit 10", got, err)
		}
	}
}

// TestTemperatureDistribution draws with the default sampler (the request
// id) for 10,000 request ids and compares the shares with the hand-worked
// softmax probabilities. 4 standard deviations of a share over 10,000
// draws is at most 4*sqrt(0.25/10000) = 0.02.
func TestTemperatureDistribution(t *testing.T) {
	for _, c := range []struct {
		temp float64
		want []float64
	}{{1, handT1}, {0.5, handT05}} {
		s, p := threeWorkers(t, tuned(func(c2 *Config) { c2.Temperature = c.temp }))
		const n = 10000
		counts := map[uint64]int{}
		for i := range n {
			got, err := s.Select(&schemas.RequestEvent{RequestID: fmt.Sprintf("req-%d", i), Model: "m", TokenIDs: p})
			if err != nil {
				t.Fatal(err)
			}
			counts[got.Worker.WorkerID]++
		}
		for i, want := range c.want {
			share := float64(counts[uint64(i+1)]) / n
			if math.Abs(share-want) > 0.02 {
				t.Errorf("T=%v: worker %d share %.4f, want %.4f ± 0.02 (counts %v)", c.temp, i+1, share, want, counts)
			}
		}
	}
}

// TestTemperatureSameRequestSameWorker: two selectors (two instances, or
// a replay) over the same state pick the same worker for the same id,
// every time, and the choice is the one the draw implies.
func TestTemperatureSameRequestSameWorker(t *testing.T) {
	a, p := threeWorkers(t, tuned(func(c *Config) { c.Temperature = 1 }))
	b, _ := threeWorkers(t, tuned(func(c *Config) { c.Temperature = 1 }))
	draw := RequestIDSampler(0)
	seen := map[uint64]bool{}
	for i := range 300 {
		req := &schemas.RequestEvent{RequestID: fmt.Sprintf("sess-%d-wake", i), Model: "m", TokenIDs: p}
		first, _ := a.Select(req)
		for range 3 {
			if again, _ := a.Select(req); again.Worker != first.Worker {
				t.Fatalf("%s: %v then %v", req.RequestID, first.Worker, again.Worker)
			}
		}
		if other, _ := b.Select(req); other.Worker != first.Worker {
			t.Fatalf("%s: instance a chose %v, instance b %v", req.RequestID, first.Worker, other.Worker)
		}
		if want := uint64(softmaxSample(handLogits, 1, draw(req)) + 1); first.Worker.WorkerID != want {
			t.Fatalf("%s: chose %v, the draw implies worker %d", req.RequestID, first.Worker, want)
		}
		seen[first.Worker.WorkerID] = true
	}
	if len(seen) != 3 {
		t.Fatalf("300 requests reached only workers %v", seen)
	}
}

func TestInjectedSampler(t *testing.T) {
	// Candidates in (worker id, dp rank) order; cumulative 0.50648, 0.81368, 1.
	for _, c := range []struct {
		draw float64
		want uint64
	}{{0.3, 1}, {0.6, 2}, {0.9, 3}} {
		s, p := threeWorkers(t, tuned(func(c *Config) { c.Temperature = 1 }), WithSampler(func(*schemas.RequestEvent) float64 { return c.draw }))
		got, err := s.Select(&schemas.RequestEvent{RequestID: "x", Model: "m", TokenIDs: p})
		if err != nil || got.Worker.WorkerID != c.want {
			t.Errorf("draw %v: got %+v, %v; want worker %d", c.draw, got.Worker, err, c.want)
		}
	}
}

func TestRequestIDSampler(t *testing.T) {
	req := &schemas.RequestEvent{RequestID: "abc"}
	d0, d7 := RequestIDSampler(0), RequestIDSampler(7)
	if d0(req) != d0(req) {
		t.Fatal("same id, same seed, different draws")
	}
	if d0(req) == d7(req) {
		t.Fatal("the seed does not change the draw")
	}
	for i := range 1000 {
		if v := d0(&schemas.RequestEvent{RequestID: fmt.Sprint(i)}); v < 0 || v >= 1 {
			t.Fatalf("draw %v outside [0, 1)", v)
		}
	}
}
