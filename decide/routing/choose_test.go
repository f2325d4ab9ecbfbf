package routing

import (
	"errors"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// TestChooseBooksNothing: with spreading on and the clock frozen, Choose
// answers the same worker every time and adds no virtual load, while
// Select after it books as usual; its choice and candidates agree with
// Select's and Candidates'.
func TestChooseBooksNothing(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	s, p := idleThree(spreading(time.Second), WithClock(clk.now))
	req := &schemas.RequestEvent{RequestID: "inspect", Model: "m", TokenIDs: p}
	for range 3 {
		c, all, err := s.Choose(req)
		if err != nil {
			t.Fatal(err)
		}
		if c.Worker != key(1, 0) || len(all) != 3 {
			t.Fatalf("Choose = %+v among %d, want worker 1 among 3", c.Worker, len(all))
		}
		for _, a := range all {
			if a.VirtualBlocks != 0 || a.Logit != 20 {
				t.Fatalf("candidate %+v: want logit 20 and no virtual load", a)
			}
		}
	}
	if c, err := s.Select(req); err != nil || c.Worker != key(1, 0) {
		t.Fatalf("Select = %+v, %v; want worker 1", c.Worker, err)
	}
	c, all, err := s.Choose(req)
	if err != nil || c.Worker != key(2, 0) {
		t.Fatalf("after a Select, Choose = %+v, %v; want worker 2", c.Worker, err)
	}
	if all[0].VirtualBlocks != 10 || all[0].Logit != 30 {
		t.Fatalf("worker 1 after a Select: %+v, want 10 virtual blocks and logit 30", all[0])
	}
}

// TestChooseTemperatureKeepsOrder: at temperature > 0 the choice is the
// same as Select's for the same request id, and the candidates come back
// in registry order even though sampling sorts them.
func TestChooseTemperatureKeepsOrder(t *testing.T) {
	ws := staticWorkers{worker(3, "m", 16, 1), worker(1, "m", 16, 2)}
	ix := index.New()
	p := prompt(160)
	store(t, ix, key(1, 1), p, 16, 4)
	s := mustSelector(NewSelector(ws, ix, NewLoadTable(), tuned(func(c *Config) { c.Temperature = 0.5 })))
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		req := &schemas.RequestEvent{RequestID: id, Model: "m", TokenIDs: p}
		want, err := s.Select(req)
		if err != nil {
			t.Fatal(err)
		}
		got, all, err := s.Choose(req)
		if err != nil || got.Worker != want.Worker {
			t.Fatalf("request %s: Choose = %+v, %v; Select = %+v", id, got.Worker, err, want.Worker)
		}
		if len(all) != 3 || all[0].Worker != key(3, 0) || all[1].Worker != key(1, 0) || all[2].Worker != key(1, 1) {
			t.Fatalf("candidates not in registry order: %+v", all)
		}
		if all[2].Overlap != 4 {
			t.Fatalf("worker 1 rank 1 overlap = %d, want 4", all[2].Overlap)
		}
	}
}

func TestChooseNoWorker(t *testing.T) {
	s := mustSelector(NewSelector(staticWorkers{worker(1, "m", 16, 1)}, index.New(), nil))
	_, all, err := s.Choose(&schemas.RequestEvent{Model: "other", TokenIDs: prompt(32)})
	if !errors.Is(err, ErrNoWorker) || len(all) != 0 {
		t.Fatalf("Choose for an unserved model = %d candidates, %v; want none, ErrNoWorker", len(all), err)
	}
}
