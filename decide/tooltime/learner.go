package tooltime

import (
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Source says where an expected tool time came from.
type Source int

const (
	// Default: neither the tool nor the "" bucket had MinSamples; the
	// configured Default was used.
	Default Source = iota
	// Learned: the tool's own window had MinSamples.
	Learned
	// AnyTool: the tool had too few observations (or was untracked), so the
	// "" bucket, which sees every observation, was used.
	AnyTool
	// Provisional: no bucket had MinSamples yet, but some tool time was
	// observed: the larger of Default and the "" bucket's percentile so
	// far (with under 10 observations, p90 is their maximum). A cold
	// start pins at least as long as anything seen, because a pin that
	// lapses costs a recompute while one that outlives its tool only
	// holds L3 a little longer.
	Provisional
)

func (s Source) String() string {
	switch s {
	case Default:
		return "default"
	case Learned:
		return "learned"
	case AnyTool:
		return "any_tool"
	case Provisional:
		return "provisional"
	}
	return "unknown"
}

// ToolStats is one bucket's state, for metrics and inspection.
type ToolStats struct {
	Tool     string // "" is the any-tool bucket
	Samples  int    // observations in the window, <= Window
	P50, P90 time.Duration
	// Estimate and Source are what Expected returns for this tool alone.
	Estimate time.Duration
	Source   Source
}

// bucket keeps the most recent gaps twice: in arrival order (ring), to know
// which one falls out, and sorted, so that a percentile is one index and an
// Observe is two binary searches and two short memmoves rather than a sort.
type bucket struct {
	ring   []time.Duration // grows to Window, then wraps at next
	next   int
	sorted []time.Duration // the same values, ascending
	// tail[i] is the sum of sorted[i:], made again when a Remaining
	// finds it stale (nil): Remaining is then a binary search.
	tail []time.Duration
}

// at is the nearest-rank percentile p of the window.
func (b *bucket) at(p float64) time.Duration { return nearestRank(b.sorted, p) }

// Learner learns expected tool times. It is safe for concurrent use.
type Learner struct {
	cfg Config

	mu        sync.Mutex
	any       bucket
	tools     map[string]*bucket // at most cfg.MaxTools entries
	discarded uint64
	untracked uint64
}

// New returns a Learner. Zero fields of c take their defaults, and so do
// fields Validate would reject (New cannot fail): call c.Validate first to
// surface mistakes. MinSamples above Window raises Window to MinSamples.
func New(c Config) *Learner {
	c = c.normalized()
	return &Learner{
		cfg:   c,
		tools: make(map[string]*bucket),
	}
}

// Config returns the configuration in use, after defaults.
func (l *Learner) Config() Config { return l.cfg }

// Observe records that tool ran for gap. Every kept observation feeds the ""
// (any tool) bucket, and also the tool's own bucket unless tool is "", longer
// than MaxNameLen, or new while MaxTools names are already tracked. It
// returns false, and counts the gap in Discarded, for gap <= 0 (clock skew,
// out-of-order events) or gap > MaxGap (the user left).
func (l *Learner) Observe(tool string, gap time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gap <= 0 || gap > l.cfg.MaxGap {
		l.discarded++
		return false
	}
	l.push(&l.any, gap)
	if tool == "" {
		return true
	}
	b := l.tools[tool]
	if b == nil {
		if len(l.tools) >= l.cfg.MaxTools || len(tool) > MaxNameLen {
			l.untracked++
			return true
		}
		// strings.Clone: the caller's name may be a slice of a large
		// decode buffer that the map would otherwise keep alive.
		b = &bucket{}
		l.tools[strings.Clone(tool)] = b
	}
	l.push(b, gap)
	return true
}

func (l *Learner) push(b *bucket, gap time.Duration) {
	if len(b.ring) < l.cfg.Window {
		b.ring = append(b.ring, gap)
	} else {
		old := b.ring[b.next]
		b.ring[b.next] = gap
		b.next = (b.next + 1) % l.cfg.Window
		i, _ := slices.BinarySearch(b.sorted, old)
		b.sorted = slices.Delete(b.sorted, i, i+1)
	}
	i, _ := slices.BinarySearch(b.sorted, gap)
	b.sorted = slices.Insert(b.sorted, i, gap)
	b.tail = b.tail[:0]
}

// residual is the mean of gap − elapsed over the gaps longer than
// elapsed, ok false when there is none.
func (b *bucket) residual(elapsed time.Duration) (time.Duration, bool) {
	n := len(b.sorted)
	if len(b.tail) != n+1 {
		b.tail = slices.Grow(b.tail[:0], n+1)[:n+1]
		b.tail[n] = 0
		for i := n - 1; i >= 0; i-- {
			b.tail[i] = b.tail[i+1] + b.sorted[i]
		}
	}
	i, _ := slices.BinarySearch(b.sorted, elapsed+1)
	if i == n {
		return 0, false
	}
	k := time.Duration(n - i)
	return (b.tail[i] - k*elapsed) / k, true
}

// Expected returns the expected tool time for a response that called tools:
// the largest of the tools' estimates, since the conversation waits for all
// of them. A tool with fewer than MinSamples observations falls back to the
// "" bucket if that has MinSamples, else to the larger of Config.Default
// and what the "" bucket has so far (Provisional), else to Config.Default. No tools (the
// response announced a tool call without naming it) gives the "" bucket or
// Default. The Source is that of the largest estimate. The cost is a map
// lookup and an index per tool: windows are kept sorted by Observe.
func (l *Learner) Expected(tools []string) (time.Duration, Source) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fallback, fbSrc := l.fallbackLocked()
	if len(tools) == 0 {
		return fallback, fbSrc
	}
	var best time.Duration
	var src Source
	for i, t := range tools {
		d, s := fallback, fbSrc
		if b := l.tools[t]; b != nil && t != "" && len(b.ring) >= l.cfg.MinSamples {
			d, s = b.at(l.cfg.Percentile), Learned
		}
		if i == 0 || d > best {
			best, src = d, s
		}
	}
	return best, src
}

// fallbackLocked is the estimate of a tool without MinSamples of its own.
func (l *Learner) fallbackLocked() (time.Duration, Source) {
	switch n := len(l.any.ring); {
	case n >= l.cfg.MinSamples:
		return l.any.at(l.cfg.Percentile), AnyTool
	case n > 0:
		return max(l.cfg.Default, l.any.at(l.cfg.Percentile)), Provisional
	}
	return l.cfg.Default, Default
}

// nearestRank is the nearest-rank percentile of sorted: the smallest value
// with at least p of the values at or below it, i.e. sorted[ceil(p*n)-1]
// (1..20 at p=0.9 gives 18). It never interpolates, so the estimate is
// always a gap that was observed. Empty input gives 0.
func nearestRank(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	// The epsilon absorbs float error such as 0.9*20 = 18.000000000000004,
	// which would otherwise round up to rank 19.
	rank := int(math.Ceil(p*float64(n) - 1e-9))
	rank = max(1, min(rank, n))
	return sorted[rank-1]
}

// Snapshot returns every bucket's state, sorted by tool name ("" first).
func (l *Learner) Snapshot() []ToolStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]ToolStats, 0, len(l.tools)+1)
	fallback, fbSrc := l.fallbackLocked()
	out = append(out, ToolStats{Tool: "", Samples: len(l.any.ring),
		P50: l.any.at(0.5), P90: l.any.at(0.9), Estimate: fallback, Source: fbSrc})
	for name, b := range l.tools {
		st := ToolStats{Tool: name, Samples: len(b.ring), P50: b.at(0.5), P90: b.at(0.9),
			Estimate: fallback, Source: fbSrc}
		if len(b.ring) >= l.cfg.MinSamples {
			st.Estimate, st.Source = b.at(l.cfg.Percentile), Learned
		}
		out = append(out, st)
	}
	slices.SortFunc(out[1:], func(a, b ToolStats) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Discarded is how many observations Observe rejected (gap <= 0 or
// > MaxGap) since New.
func (l *Learner) Discarded() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.discarded
}

// Untracked is how many kept observations fed only the "" bucket because
// their tool name was new past MaxTools or longer than MaxNameLen. A rising
// count means MaxTools is too low, or someone is inventing tool names.
func (l *Learner) Untracked() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.untracked
}

// Remaining is how much longer a call of tools that has run for elapsed
// is expected to run: over the window of each tool (the "" bucket for a
// tool without MinSamples of its own), the mean of gap − elapsed over the
// gaps longer than elapsed; the largest over tools, since the
// conversation waits for all of them. A call longer than every gap in a
// window gives MaxGap: nothing seen says it will end. Without
// observations it is Default less elapsed, at least 0. It costs a
// binary search per tool (the window's sums are made again after an
// Observe, once).
func (l *Learner) Remaining(tools []string, elapsed time.Duration) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(tools) == 0 {
		tools = []string{""}
	}
	var worst time.Duration
	for _, t := range tools {
		b := &l.any
		if tb := l.tools[t]; tb != nil && t != "" && len(tb.ring) >= l.cfg.MinSamples {
			b = tb
		}
		r := max(l.cfg.Default-elapsed, 0)
		if len(b.sorted) > 0 {
			var ok bool
			if r, ok = b.residual(elapsed); !ok {
				r = l.cfg.MaxGap
			}
		}
		worst = max(worst, r)
	}
	return worst
}
