package tooltime

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func cfg(min, window int) Config {
	c := DefaultConfig()
	c.MinSamples, c.Window = min, window
	return c
}

func observeAll(t *testing.T, l *Learner, tool string, gaps ...time.Duration) {
	t.Helper()
	for _, g := range gaps {
		if !l.Observe(tool, g) {
			t.Fatalf("Observe(%q, %v) = false, want kept", tool, g)
		}
	}
}

func seconds(from, to int) []time.Duration {
	var out []time.Duration
	for i := from; i <= to; i++ {
		out = append(out, time.Duration(i)*time.Second)
	}
	return out
}

func stats(t *testing.T, l *Learner, tool string) ToolStats {
	t.Helper()
	for _, s := range l.Snapshot() {
		if s.Tool == tool {
			return s
		}
	}
	t.Fatalf("no bucket %q in snapshot", tool)
	return ToolStats{}
}

func TestNearestRankHandWorked(t *testing.T) {
	s := seconds(1, 20)
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{
		{0.9, 18 * time.Second}, // ceil(0.9*20) = 18
		{0.5, 10 * time.Second}, // ceil(10) = 10
		{0.95, 19 * time.Second},
		{0.91, 19 * time.Second}, // ceil(18.2) = 19
		{1, 20 * time.Second},
		{0.01, 1 * time.Second}, // ceil(0.2) = 1
	} {
		if got := nearestRank(s, tc.p); got != tc.want {
			t.Errorf("p%v of 1..20s = %v, want %v", tc.p, got, tc.want)
		}
	}
	// 1..10 at p90: ceil(9) = 9; p50: ceil(5) = 5.
	if got := nearestRank(seconds(1, 10), 0.9); got != 9*time.Second {
		t.Errorf("p90 of 1..10s = %v, want 9s", got)
	}
	if got := nearestRank(seconds(7, 7), 0.9); got != 7*time.Second {
		t.Errorf("p90 of one sample = %v, want it", got)
	}
	if got := nearestRank(nil, 0.9); got != 0 {
		t.Errorf("p90 of nothing = %v, want 0", got)
	}
}

func TestLearnedPercentilesFromObservations(t *testing.T) {
	l := New(cfg(20, 256))
	// Shuffled order: the window must be sorted before ranking.
	gaps := seconds(1, 20)
	for i := range gaps {
		j := (i * 7) % len(gaps)
		gaps[i], gaps[j] = gaps[j], gaps[i]
	}
	observeAll(t, l, "search", gaps...)
	d, src := l.Expected([]string{"search"})
	if d != 18*time.Second || src != Learned {
		t.Fatalf("Expected(search) = %v %v, want 18s learned", d, src)
	}
	s := stats(t, l, "search")
	if s.Samples != 20 || s.P50 != 10*time.Second || s.P90 != 18*time.Second || s.Estimate != 18*time.Second {
		t.Fatalf("stats = %+v", s)
	}

	c := cfg(20, 256)
	c.Percentile = 0.5
	l = New(c)
	observeAll(t, l, "search", seconds(1, 20)...)
	if d, _ := l.Expected([]string{"search"}); d != 10*time.Second {
		t.Fatalf("p50 estimate = %v, want 10s", d)
	}
}

func TestFallbackChain(t *testing.T) {
	l := New(cfg(5, 16))
	// Nothing yet: Default for named, unnamed and empty-name tools.
	for _, tools := range [][]string{nil, {"a"}, {""}} {
		if d, src := l.Expected(tools); d != 30*time.Second || src != Default {
			t.Fatalf("empty learner Expected(%q) = %v %v, want 30s default", tools, d, src)
		}
	}
	// 4 observations of a: neither a nor "" has MinSamples. Provisional:
	// Default, since nothing observed (at most 4s) was longer.
	observeAll(t, l, "a", seconds(1, 4)...)
	if d, src := l.Expected([]string{"a"}); d != 30*time.Second || src != Provisional {
		t.Fatalf("below MinSamples: %v %v, want 30s provisional", d, src)
	}
	// A 5th observation, of b: "" has 5 (1,2,3,4,100s; p90 rank 5 = 100s),
	// a has 4 and b has 1, so both fall back to the any-tool bucket.
	observeAll(t, l, "b", 100*time.Second)
	for _, tools := range [][]string{nil, {"a"}, {"b"}, {"never-seen"}, {""}} {
		if d, src := l.Expected(tools); d != 100*time.Second || src != AnyTool {
			t.Fatalf("Expected(%q) = %v %v, want 100s any_tool", tools, d, src)
		}
	}
	// a reaches 5 (1..5s): its own p90 (5s) wins, though lower than "".
	observeAll(t, l, "a", 5*time.Second)
	if d, src := l.Expected([]string{"a"}); d != 5*time.Second || src != Learned {
		t.Fatalf("Expected(a) = %v %v, want 5s learned", d, src)
	}
	// Max over tools: a learned 5s vs b's any-tool fallback. "" now holds
	// 1..5s and 100s: p90 rank ceil(5.4)=6 = 100s.
	if d, src := l.Expected([]string{"a", "b"}); d != 100*time.Second || src != AnyTool {
		t.Fatalf("Expected(a,b) = %v %v, want 100s any_tool", d, src)
	}
	observeAll(t, l, "c", seconds(1, 5)...)
	observeAll(t, l, "c", time.Minute) // c = 1..5s, 60s; p90 = 60s
	if d, src := l.Expected([]string{"a", "c"}); d != time.Minute || src != Learned {
		t.Fatalf("Expected(a,c) = %v %v, want 1m learned", d, src)
	}
}

// TestProvisionalNeverBelowObserved: before MinSamples, a tool time
// longer than Default already seen lifts the estimate to it (with under 10
// observations, p90 is the maximum); a short one never lowers it.
func TestProvisionalNeverBelowObserved(t *testing.T) {
	l := New(cfg(20, 256))
	observeAll(t, l, "run", 5*time.Second)
	if d, src := l.Expected([]string{"run"}); d != 30*time.Second || src != Provisional {
		t.Fatalf("after one short call: %v %v, want 30s provisional", d, src)
	}
	observeAll(t, l, "run", 100*time.Second, 7*time.Second)
	if d, src := l.Expected([]string{"run"}); d != 100*time.Second || src != Provisional {
		t.Fatalf("after a 100s call: %v %v, want 100s provisional", d, src)
	}
	if d, src := l.Expected(nil); d != 100*time.Second || src != Provisional {
		t.Fatalf("unnamed: %v %v, want 100s provisional", d, src)
	}
	if got := Provisional.String(); got != "provisional" {
		t.Fatalf("String() = %q", got)
	}
}

func TestWindowDrift(t *testing.T) {
	l := New(cfg(10, 20))
	observeAll(t, l, "t", seconds(1, 1)...)
	for range 19 {
		observeAll(t, l, "t", time.Second)
	}
	if d, _ := l.Expected([]string{"t"}); d != time.Second {
		t.Fatalf("before drift = %v, want 1s", d)
	}
	// Half the window replaced by 10s: p90 rank 18 is 10s, p50 rank 10 still 1s.
	for range 10 {
		observeAll(t, l, "t", 10*time.Second)
	}
	s := stats(t, l, "t")
	if s.Samples != 20 || s.P50 != time.Second || s.P90 != 10*time.Second {
		t.Fatalf("half drifted: %+v", s)
	}
	// The rest replaced too: the old 1s observations have all fallen out.
	for range 10 {
		observeAll(t, l, "t", 10*time.Second)
	}
	s = stats(t, l, "t")
	if s.Samples != 20 || s.P50 != 10*time.Second || s.P90 != 10*time.Second {
		t.Fatalf("fully drifted: %+v", s)
	}
	// And back down: the ring keeps wrapping.
	observeAll(t, l, "t", seconds(1, 20)...)
	if d, _ := l.Expected([]string{"t"}); d != 18*time.Second {
		t.Fatalf("after wrap = %v, want 18s", d)
	}
}

func TestMaxToolsBound(t *testing.T) {
	c := cfg(3, 8)
	c.MaxTools = 2
	l := New(c)
	observeAll(t, l, "a", seconds(1, 3)...)
	observeAll(t, l, "b", seconds(1, 3)...)
	observeAll(t, l, "c", time.Minute, time.Minute, time.Minute)
	if got := l.Untracked(); got != 3 {
		t.Fatalf("Untracked = %d, want 3", got)
	}
	// c is not tracked, so it is estimated from "" (1,2,3,1,2,3,60,60: p90 rank 8 = 60s).
	if d, src := l.Expected([]string{"c"}); d != time.Minute || src != AnyTool {
		t.Fatalf("Expected(c) = %v %v, want 1m any_tool", d, src)
	}
	// Tracked names keep learning after the bound is reached.
	observeAll(t, l, "a", 4*time.Second)
	if d, src := l.Expected([]string{"a"}); d != 4*time.Second || src != Learned {
		t.Fatalf("Expected(a) = %v %v, want 4s learned", d, src)
	}
	// Hostile flood of distinct names: buckets and windows stay bounded.
	for i := range 10000 {
		l.Observe(fmt.Sprintf("evil-%d", i), time.Second)
	}
	l.Observe(strings.Repeat("x", MaxNameLen+1), time.Second)
	snap := l.Snapshot()
	if len(snap) != 3 || snap[0].Tool != "" || snap[1].Tool != "a" || snap[2].Tool != "b" {
		t.Fatalf("snapshot tools = %+v, want \"\", a, b", snap)
	}
	for _, s := range snap {
		if s.Samples > c.Window {
			t.Fatalf("bucket %q holds %d > Window %d", s.Tool, s.Samples, c.Window)
		}
	}
	if got := l.Untracked(); got != 3+10001 {
		t.Fatalf("Untracked = %d, want %d", got, 3+10001)
	}
	// A long name is never tracked, even with room in the map.
	l2 := New(c)
	l2.Observe(strings.Repeat("y", MaxNameLen+1), time.Second)
	if n := len(l2.Snapshot()); n != 1 {
		t.Fatalf("long name made a bucket: %d rows", n)
	}
}

func TestDiscardedGaps(t *testing.T) {
	c := cfg(1, 4)
	c.MaxGap = time.Minute
	l := New(c)
	for _, g := range []time.Duration{0, -time.Second, time.Minute + 1, 24 * time.Hour, math.MinInt64} {
		if l.Observe("t", g) {
			t.Fatalf("Observe(%v) kept, want discarded", g)
		}
	}
	if got := l.Discarded(); got != 5 {
		t.Fatalf("Discarded = %d, want 5", got)
	}
	if d, src := l.Expected([]string{"t"}); src != Default || d != 30*time.Second {
		t.Fatalf("discarded gaps were learned: %v %v", d, src)
	}
	// The bounds themselves: MaxGap is kept, 1ns is kept.
	observeAll(t, l, "t", time.Minute, time.Nanosecond)
	if got := l.Discarded(); got != 5 {
		t.Fatalf("Discarded = %d after kept gaps, want 5", got)
	}
	if s := stats(t, l, ""); s.Samples != 2 {
		t.Fatalf("any bucket samples = %d, want 2", s.Samples)
	}
}

func TestEmptyToolNameFeedsOnlyAny(t *testing.T) {
	l := New(cfg(1, 4))
	observeAll(t, l, "", 7*time.Second)
	snap := l.Snapshot()
	if len(snap) != 1 || snap[0].Samples != 1 || snap[0].Source != AnyTool || snap[0].Estimate != 7*time.Second {
		t.Fatalf("snapshot = %+v", snap)
	}
}

func TestConcurrentObserveExpected(t *testing.T) {
	l := New(cfg(5, 64))
	const writers, per = 4, 500
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tool := fmt.Sprintf("tool-%d", w%2)
			for i := range per {
				l.Observe(tool, time.Duration(i%50+1)*time.Second)
				if i%10 == 0 {
					l.Observe(tool, -1) // discarded
				}
			}
		}()
	}
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, _ := l.Expected([]string{"tool-0", "tool-1"})
				if d <= 0 || d > time.Hour {
					t.Errorf("Expected = %v out of range", d)
					return
				}
				_ = l.Snapshot()
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if got := l.Discarded(); got != writers*per/10 {
		t.Fatalf("Discarded = %d, want %d", got, writers*per/10)
	}
	snap := l.Snapshot()
	if len(snap) != 3 {
		t.Fatalf("snapshot = %+v", snap)
	}
	for _, s := range snap {
		if s.Samples != 64 || s.Source == Default {
			t.Fatalf("bucket %+v, want full window, learned", s)
		}
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig invalid: %v", err)
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatalf("zero Config (all defaults) invalid: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"negative default":    func(c *Config) { c.Default = -time.Second },
		"percentile > 1":      func(c *Config) { c.Percentile = 1.5 },
		"negative percentile": func(c *Config) { c.Percentile = -0.1 },
		"NaN percentile":      func(c *Config) { c.Percentile = math.NaN() },
		"negative min":        func(c *Config) { c.MinSamples = -1 },
		"negative window":     func(c *Config) { c.Window = -1 },
		"min > window":        func(c *Config) { c.MinSamples, c.Window = 30, 10 },
		"negative max tools":  func(c *Config) { c.MaxTools = -5 },
		"negative max gap":    func(c *Config) { c.MaxGap = -time.Minute },
	} {
		c := DefaultConfig()
		mut(&c)
		err := c.Validate()
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: Validate = %v, want ErrInvalidConfig", name, err)
		}
		// New never fails or panics: the bad field takes a usable value.
		n := New(c).Config()
		if err := n.Validate(); err != nil {
			t.Errorf("%s: New normalised to an invalid config: %v", name, err)
		}
	}
	if got := New(Config{MinSamples: 30, Window: 10}).Config(); got.Window != 30 {
		t.Fatalf("MinSamples > Window: Window = %d, want raised to 30", got.Window)
	}
	if got := New(Config{}).Config(); got != DefaultConfig() {
		t.Fatalf("New(Config{}) = %+v, want defaults", got)
	}
}

func TestSourceString(t *testing.T) {
	for s, want := range map[Source]string{Default: "default", Learned: "learned", AnyTool: "any_tool", 9: "unknown"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(s), s.String(), want)
		}
	}
}

func BenchmarkExpected(b *testing.B) {
	l := New(DefaultConfig())
	for i := range 256 {
		l.Observe("search", time.Duration(i+1)*time.Millisecond)
	}
	tools := []string{"search"}
	l.Expected(tools)
	b.ReportAllocs()
	for b.Loop() {
		l.Expected(tools)
	}
}

func BenchmarkObserveThenExpected(b *testing.B) {
	l := New(DefaultConfig())
	tools := []string{"search"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		l.Observe("search", time.Duration(i%1000+1)*time.Millisecond)
		l.Expected(tools)
	}
}

// The sorted copy must always equal the ring sorted, through many wraps and
// with duplicates, or every percentile is wrong.
func TestSortedWindowMatchesRing(t *testing.T) {
	l := New(cfg(1, 13))
	x := uint64(12345)
	for i := range 2000 {
		x = x*6364136223846793005 + 1442695040888963407 // LCG: deterministic
		observeAll(t, l, "t", time.Duration(x>>58+1)*time.Second)
		b := l.tools["t"]
		want := slices.Sorted(slices.Values(b.ring))
		if !slices.Equal(want, b.sorted) {
			t.Fatalf("after %d observations sorted = %v, want %v", i+1, b.sorted, want)
		}
	}
}
