package retention

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/race"
	"github.com/hintstream/hintstream/schemas"
)

// TestPlanEqualsTheReference: the planner makes the same plans as the
// reference (reference_test.go, the planner of 77b8990 made
// deterministic) over random sequences of requests, tool calls, plans and
// takeovers: every Plan's pins (slots, keys in order, TTLs, priorities,
// kinds, revisions), the pages it pinned (Top) and its counters. The
// sequences share prefixes across sessions (ties in P are common: every
// session's turn has the same learned share), jump past four horizons
// (pages forgotten), and some bound the tracked pages or the budget to a
// page or two.
func TestPlanEqualsTheReference(t *testing.T) {
	sequences, ops := 400, 600
	if race.Enabled {
		sequences = 60 // the full count runs in make sim
	}
	for seq := range sequences {
		rng := rand.New(rand.NewPCG(uint64(seq), 36))
		cfg := Config{Budget: int64(1+rng.IntN(40)) * 512 * schemas.DefaultKVBytesPerToken,
			Horizon: time.Duration(30+rng.IntN(600)) * time.Second, Interval: time.Duration(1+rng.IntN(5)) * time.Second}
		switch rng.IntN(4) {
		case 0:
			cfg.MaxTracked = 5 + rng.IntN(200)
		case 1:
			cfg.MinProbability = 0.01 + rng.Float64()/2
		}
		got, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := newRef(cfg)
		if err != nil {
			t.Fatal(err)
		}
		at := t0
		for op := range ops {
			switch r := rng.IntN(100); {
			case r < 2:
				at = at.Add(5 * cfg.Horizon) // everything long dead
			case r < 30:
				at = at.Add(time.Duration(rng.IntN(3000)) * time.Millisecond)
			default:
				at = at.Add(time.Duration(rng.IntN(40)) * time.Second)
			}
			sess := ""
			if rng.IntN(4) > 0 {
				sess = "s" + strconv.Itoa(rng.IntN(12))
			}
			switch r := rng.IntN(100); {
			case r < 55:
				keys := make([]string, 1+rng.IntN(12))
				base := rng.IntN(15)
				for i := range keys {
					keys[i] = fmt.Sprintf("b%d-%d", base, i)
					if rng.IntN(8) == 0 {
						keys[i] = fmt.Sprintf("u%d-%d", op, i) // seen once
					}
				}
				tokens := 512
				if rng.IntN(10) == 0 {
					tokens = 256
				}
				got.Request(at, sess, keys, tokens)
				want.Request(at, sess, keys, tokens)
			case r < 65:
				d := time.Duration(rng.IntN(120)) * time.Second
				got.ToolCall(at, sess, d)
				want.ToolCall(at, sess, d)
			case r < 67:
				release, term := rng.IntN(2) == 0, uint64(1+rng.IntN(5))
				got.Takeover(release, term)
				want.takeover(release, term)
			default:
				g, w := got.Plan(at), want.Plan(at)
				if !reflect.DeepEqual(g, w) {
					t.Fatalf("sequence %d, op %d: plan\n%+v\nthe reference's\n%+v", seq, op, g, w)
				}
				if g, w := got.Top(0), want.Top(0); !reflect.DeepEqual(g, w) {
					t.Fatalf("sequence %d, op %d: pinned\n%+v\nthe reference's\n%+v", seq, op, g, w)
				}
				if g, w := got.Stats(), want.Stats(); !reflect.DeepEqual(g, w) {
					t.Fatalf("sequence %d, op %d: stats\n%+v\nthe reference's\n%+v", seq, op, g, w)
				}
			}
		}
	}
}
