// Package hdr is a small HDR-style latency histogram: log-linear buckets
// that keep three significant decimal digits from 1 µs to 60 s, in fixed
// memory (about 220 KB), with O(1) Record. It follows HdrHistogram's
// bucket layout (Gil Tene), counting in nanoseconds.
//
// A Histogram is not safe for concurrent use: give each goroutine its own
// and Merge them, or guard one with a mutex.
package hdr

import (
	"math"
	"math/bits"
	"time"
)

// Lowest and Highest bound the range with three significant digits.
// Values below Lowest are kept exactly (finer, not coarser); values above
// Highest are recorded as Highest and counted by Saturated.
const (
	Lowest  = time.Microsecond
	Highest = 60 * time.Second
)

const (
	// 3 significant digits need 2·10³ distinct sub-buckets; the next power
	// of two is 2048, so every value keeps at least 1 part in 1024.
	subBucketCount     = 2048
	subBucketHalfCount = subBucketCount / 2
	subBucketHalfMag   = 10 // log2(subBucketHalfCount)
	subBucketMask      = subBucketCount - 1
	// Counting in ns with unit 1 keeps ≥1 µs values at 3 digits and
	// values under 2,048 ns exact.
	bucketCount = 26 // smallest n with 2048 << (n-1) > 60e9
	countsLen   = (bucketCount + 1) * subBucketHalfCount
)

// Histogram counts durations. The zero value is not usable: use New.
type Histogram struct {
	counts    []int64
	total     int64
	sum       float64 // exact sum in ns, for Mean
	min, max  int64   // exact, in ns
	saturated int64
}

// New returns an empty histogram.
func New() *Histogram {
	return &Histogram{counts: make([]int64, countsLen), min: math.MaxInt64}
}

// Record counts one duration. Negative durations count as 0; durations
// above Highest count as Highest (see Saturated).
func (h *Histogram) Record(d time.Duration) { h.RecordN(d, 1) }

// RecordN counts d n times (n ≤ 0 records nothing).
func (h *Histogram) RecordN(d time.Duration, n int64) {
	if n <= 0 {
		return
	}
	v := int64(d)
	if v < 0 {
		v = 0
	}
	if v > int64(Highest) {
		v = int64(Highest)
		h.saturated += n
	}
	h.counts[index(v)] += n
	h.total += n
	h.sum += float64(v) * float64(n)
	h.min = min(h.min, v)
	h.max = max(h.max, v)
}

// Merge adds every count of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.total == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.total += o.total
	h.sum += o.sum
	h.saturated += o.saturated
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// Reset empties h.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total, h.sum, h.min, h.max, h.saturated = 0, 0, math.MaxInt64, 0, 0
}

// Count is the number of recorded values.
func (h *Histogram) Count() int64 { return h.total }

// Saturated is how many recorded values were above Highest.
func (h *Histogram) Saturated() int64 { return h.saturated }

// Max is the largest recorded value, exactly (0 when empty).
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Min is the smallest recorded value, exactly (0 when empty).
func (h *Histogram) Min() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.min)
}

// Mean is the exact mean of the recorded values (0 when empty).
func (h *Histogram) Mean() time.Duration {
	if h.total == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.total))
}

// ValueAtQuantile returns the smallest value v such that a fraction q
// (0..1) of the recorded values are ≤ v, reported as the highest value
// equivalent to it (so within 1 part in 1024 above the true one), and
// never above Max. q ≤ 0 gives Min; an empty histogram gives 0.
func (h *Histogram) ValueAtQuantile(q float64) time.Duration {
	if h.total == 0 {
		return 0
	}
	if q <= 0 || math.IsNaN(q) {
		return h.Min()
	}
	q = min(q, 1)
	want := int64(math.Ceil(q * float64(h.total)))
	want = max(want, 1)
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return time.Duration(min(highestEquivalent(valueAt(i)), h.max))
		}
	}
	return h.Max()
}

// Point is one step of the cumulative distribution: a fraction Quantile
// of the recorded values are ≤ Value.
type Point struct {
	Value    time.Duration
	Quantile float64
}

// CDF returns one point per non-empty bucket, in increasing Value, the
// last with Quantile 1. Values are each bucket's highest equivalent value
// (capped at Max), as ValueAtQuantile reports them.
func (h *Histogram) CDF() []Point {
	if h.total == 0 {
		return nil
	}
	var out []Point
	var seen int64
	for i, c := range h.counts {
		if c == 0 {
			continue
		}
		seen += c
		v := min(highestEquivalent(valueAt(i)), h.max)
		out = append(out, Point{Value: time.Duration(v), Quantile: float64(seen) / float64(h.total)})
	}
	return out
}

// bucketIndex is the power-of-two bucket of v (0 for v < 2048).
func bucketIndex(v int64) int {
	return 64 - bits.LeadingZeros64(uint64(v)|subBucketMask) - (subBucketHalfMag + 1)
}

func index(v int64) int {
	b := bucketIndex(v)
	sub := int(v >> uint(b))
	// Bucket 0 uses all 2048 sub-buckets; each later one only its upper
	// half (the lower half is the previous bucket's range).
	return (b+1)<<subBucketHalfMag + sub - subBucketHalfCount
}

// valueAt is the lowest value counted at counts index i.
func valueAt(i int) int64 {
	b := i>>subBucketHalfMag - 1
	sub := i&(subBucketHalfCount-1) + subBucketHalfCount
	if b < 0 {
		sub -= subBucketHalfCount
		b = 0
	}
	return int64(sub) << uint(b)
}

// highestEquivalent is the largest value counted in the same slot as v.
func highestEquivalent(v int64) int64 {
	b := bucketIndex(v)
	return v&^(int64(1)<<uint(b)-1) + int64(1)<<uint(b) - 1
}
