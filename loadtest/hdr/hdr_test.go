package hdr

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// 1..100 µs, one each. Hand-checked slots: 50,000 ns lies in the bucket
// [32,768, 65,536) whose slots are 32 ns wide, so it is reported as the
// top of [49,984, 50,015]; 99,000 ns in [65,536, 131,072), 64 ns slots:
// [98,944, 99,007]; the top of 100,000's slot (100,031) is capped at Max.
func TestQuantilesHandChecked(t *testing.T) {
	h := New()
	for i := 1; i <= 100; i++ {
		h.Record(time.Duration(i) * time.Microsecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{
		{0, time.Microsecond},
		{0.01, 1000},    // 1,000 ns is below 2,048: exact
		{0.02, 2000},    // [1,024, 2,048) is also exact (1 ns slots in bucket 0)
		{0.03, 3001},    // 3,000 in [2,048, 4,096): 2 ns slots, [3,000, 3,001]
		{0.5, 50015},    // the 50th value
		{0.501, 51007},  // ceil(50.1) = 51st: 51,000 → [50,976, 51,007]
		{0.99, 99007},   // the 99th value
		{0.999, 100000}, // ceil(99.9) = 100th, capped at Max
		{1, 100000},
	} {
		if got := h.ValueAtQuantile(c.q); got != c.want {
			t.Errorf("ValueAtQuantile(%v) = %d ns, want %d", c.q, got, c.want)
		}
	}
	if h.Count() != 100 || h.Max() != 100*time.Microsecond || h.Min() != time.Microsecond {
		t.Fatalf("count %d max %v min %v", h.Count(), h.Max(), h.Min())
	}
	if got := h.Mean(); got != 50500*time.Nanosecond { // (1+100)/2 µs, exact
		t.Fatalf("mean %v, want 50.5µs", got)
	}
}

func TestThreeSignificantDigits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := New()
	for i := 0; i < 1000; i++ {
		// Log-uniform, so every bucket is visited.
		v := time.Duration(float64(Lowest) * math.Pow(float64(Highest/Lowest), r.Float64()))
		h.Reset()
		h.Record(v)
		h.Record(Highest) // so the cap at Max does not hide the slot's top
		got := h.ValueAtQuantile(0.5)
		if got < v || float64(got-v) > float64(v)/1000 {
			t.Fatalf("value %d reported as %d: more than 1 part in 1000 off", v, got)
		}
	}
}

func TestMergeEqualsOneHistogram(t *testing.T) {
	a, b, all := New(), New(), New()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		v := time.Duration(r.ExpFloat64() * float64(time.Millisecond))
		all.Record(v)
		if i%3 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	a.Merge(b)
	a.Merge(nil)
	a.Merge(New())
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.99, 0.999, 1} {
		if a.ValueAtQuantile(q) != all.ValueAtQuantile(q) {
			t.Fatalf("q %v: merged %v, single %v", q, a.ValueAtQuantile(q), all.ValueAtQuantile(q))
		}
	}
	if a.Count() != all.Count() || a.Max() != all.Max() || a.Min() != all.Min() || a.Mean() != all.Mean() {
		t.Fatalf("merged %d/%v/%v/%v, single %d/%v/%v/%v", a.Count(), a.Max(), a.Min(), a.Mean(),
			all.Count(), all.Max(), all.Min(), all.Mean())
	}
}

func TestEdges(t *testing.T) {
	h := New()
	if h.ValueAtQuantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 || h.Min() != 0 || h.CDF() != nil {
		t.Fatal("an empty histogram must report zeros")
	}
	h.Record(-time.Second)
	h.Record(2 * time.Minute)
	h.RecordN(time.Second, 0)
	if h.Count() != 2 || h.Saturated() != 1 || h.Max() != Highest || h.Min() != 0 {
		t.Fatalf("count %d saturated %d max %v min %v", h.Count(), h.Saturated(), h.Max(), h.Min())
	}
	if got := h.ValueAtQuantile(1); got != Highest {
		t.Fatalf("p100 %v, want %v", got, Highest)
	}
	h.Reset()
	if h.Count() != 0 || h.ValueAtQuantile(1) != 0 {
		t.Fatal("Reset left counts")
	}
}

func TestCDF(t *testing.T) {
	h := New()
	h.RecordN(10*time.Microsecond, 3)
	h.Record(time.Millisecond)
	pts := h.CDF()
	// 10,000 ns: 8 ns slots, [10,000, 10,007]; 1 ms is Max, so capped.
	want := []Point{{10007, 0.75}, {time.Millisecond, 1}}
	if len(pts) != len(want) {
		t.Fatalf("CDF %v, want %v", pts, want)
	}
	for i := range want {
		if pts[i] != want[i] {
			t.Fatalf("CDF %v, want %v", pts, want)
		}
	}
}
