package retention

import (
	"errors"
	"github.com/hintstream/hintstream/schemas"
	"strconv"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func keys(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

func planner(t *testing.T, pages int) *Planner {
	t.Helper()
	p, err := New(Config{Budget: int64(pages) * 512 * schemas.DefaultKVBytesPerToken, Interval: time.Second, Horizon: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func pinnedKeys(pins []Pin) map[string]bool {
	out := map[string]bool{}
	for _, p := range pins {
		for _, k := range p.Keys {
			out[k] = true
		}
	}
	return out
}

// The most reused prefix takes the budget; a page seen once does not.
func TestPlanPinsTheMostReusedWithinBudget(t *testing.T) {
	p := planner(t, 2)
	hot, cold := keys("hot", 2), keys("cold", 3)
	for i := range 4 {
		p.Request(t0.Add(time.Duration(i)*time.Second), "", hot, 512)
	}
	p.Request(t0.Add(4*time.Second), "", cold, 512)
	got := pinnedKeys(p.Plan(t0.Add(5 * time.Second)))
	if len(got) != 2 || !got["hot0"] || !got["hot1"] {
		t.Fatalf("pinned %v, want hot0 and hot1", got)
	}
	st := p.Stats()
	if st.PinnedPages != 2 || st.PinnedBytes != 2*512*schemas.DefaultKVBytesPerToken || st.PinnedBytes > st.Budget {
		t.Fatalf("stats %+v", st)
	}
	top := p.Top(0)
	if len(top) != 2 || top[0].Reason != "shared" || top[0].Depth != 0 || !(top[0].Probability > 0.9) || top[0].Score <= 0 {
		t.Fatalf("top %+v", top)
	}
}

// Nothing new within an interval: no plan. An unchanged plan is not
// resent until its pin is due; a prefix that cools is released.
func TestPlanRenewsAndReleases(t *testing.T) {
	p := planner(t, 2)
	hot := keys("hot", 2)
	for i := range 4 {
		p.Request(t0.Add(time.Duration(i)*time.Second), "", hot, 512)
	}
	first := p.Plan(t0.Add(4 * time.Second))
	if len(first) == 0 || first[0].Kind != "pin" || first[0].TTL != 3*time.Second {
		t.Fatalf("first plan %+v", first)
	}
	if again := p.Plan(t0.Add(4*time.Second + 500*time.Millisecond)); again != nil {
		t.Fatalf("a plan within the interval: %+v", again)
	}
	if held := p.Plan(t0.Add(5 * time.Second)); len(held) != 0 {
		t.Fatalf("an unchanged plan was resent before due: %+v", held)
	}
	due := p.Plan(t0.Add(7 * time.Second))
	if len(due) == 0 || due[0].Kind != "renew" {
		t.Fatalf("no renewal when due: %+v", due)
	}
	// A hotter prefix takes the budget: the old slots are released.
	hotter := keys("new", 2)
	for i := range 12 {
		p.Request(t0.Add(8*time.Second+time.Duration(i)*time.Millisecond), "", hotter, 512)
	}
	out := p.Plan(t0.Add(10 * time.Second))
	got := pinnedKeys(out)
	if !got["new0"] || !got["new1"] || got["hot0"] {
		t.Fatalf("pinned %v", got)
	}
	releases := 0
	for _, pin := range out {
		if pin.Kind == "release" {
			releases++
			if pin.TTL != 0 || len(pin.Keys) != 0 {
				t.Fatalf("a release with keys or a TTL: %+v", pin)
			}
		}
	}
	if releases == 0 {
		t.Fatalf("nothing released: %+v", out)
	}
}

// A session whose turn ended in a tool call has its prompt pinned (the
// tool-call share's prior), for the tool's expected time times headroom.
func TestToolCallPinsTheSession(t *testing.T) {
	p := planner(t, 4)
	k := keys("s1-", 3)
	p.Request(t0, "s1", k, 512)
	p.ToolCall(t0.Add(time.Second), "s1", 10*time.Second)
	got := pinnedKeys(p.Plan(t0.Add(2 * time.Second)))
	if len(got) != 3 {
		t.Fatalf("pinned %v, want the session's 3 pages", got)
	}
	if top := p.Top(1); top[0].Reason != "tool_call" || top[0].Session != "s1" {
		t.Fatalf("top %+v", top)
	}
	// Long after the tool's expected time, the estimate has run out.
	later := pinnedKeys(p.Plan(t0.Add(5 * time.Minute)))
	if len(later) != 0 {
		t.Fatalf("still pinned long after the tool call: %v", later)
	}
}

// The learned shares move with what happens: next turns within the
// horizon raise the next-turn share.
func TestSharesLearn(t *testing.T) {
	p := planner(t, 4)
	before := p.Stats().NextTurnShare
	for i := range 20 {
		s := "s" + strconv.Itoa(i)
		p.Request(t0, s, keys(s, 1), 512)
		p.Request(t0.Add(5*time.Second), s, keys(s, 2), 512)
	}
	if after := p.Stats().NextTurnShare; !(after > 0.9 && after > before) {
		t.Fatalf("next-turn share %v (before %v)", after, before)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {Budget: -1}, {Capacity: 10, BudgetShare: 2}, {Budget: 1, MinProbability: 3},
		{Budget: 1, Horizon: -time.Second}, {Budget: 1, MaxTracked: -1}} {
		if _, err := New(c); !errors.Is(err, ErrInvalidOption) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	p, err := New(Config{Capacity: 1000})
	if err != nil || p.Config().BudgetBytes() != 500 {
		t.Fatalf("%v %+v", err, p)
	}
}
