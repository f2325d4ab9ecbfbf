package retention

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The plan's partial order (a heap for the pins, one pass for what it
// forgets) equals what a full sort of the candidates gives, as Plan did
// before: the same pages pinned in the same order, the same forgotten.
// The candidates tie often (few values of e and depth), so the key
// decides many places.
func TestBestFirstAndForgottenEqualAFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := time.Unix(1e6, 0)
	for round := range 500 {
		n := rng.IntN(300)
		c := make([]cand, n)
		for i := range c {
			st := &pageStat{depth: rng.IntN(4), last: now.Add(-time.Duration(rng.IntN(80)) * time.Minute)}
			e := float64(rng.IntN(5)) / 40
			c[i] = cand{key: fmt.Sprintf("k%03d", rng.IntN(1000)) + fmt.Sprint(i), st: st, p: e, e: e}
		}
		keep := func(x *cand) bool { return x.p >= 0.05 }
		dead := func(x *cand) bool { return x.p < 0.05/100 && now.Sub(x.st.last) > 40*time.Minute }
		max := n + 1
		if round%5 == 0 {
			max = rng.IntN(n+1) + 1
		}
		// The reference: sort all, take the kept in order, forget from
		// the end as Plan's loop did.
		ref := make([]int, n)
		for i := range ref {
			ref[i] = i
		}
		slices.SortFunc(ref, func(a, b int) int { return compareCands(&c[a], &c[b]) })
		var wantOrder, wantForgot []int
		for _, i := range ref {
			if keep(&c[i]) {
				wantOrder = append(wantOrder, i)
			}
		}
		for k := n - 1; k >= 0; k-- {
			if k >= max || dead(&c[ref[k]]) {
				wantForgot = append(wantForgot, ref[k])
				continue
			}
			break
		}
		var got []int
		b := newBestFirst(c, keep)
		for i, ok := b.next(); ok; i, ok = b.next() {
			got = append(got, i)
		}
		if !slices.Equal(got, wantOrder) {
			t.Fatalf("round %d: best first %v, a full sort %v", round, got, wantOrder)
		}
		gotForgot := forgotten(c, max, dead)
		slices.Sort(gotForgot)
		slices.Sort(wantForgot)
		if !slices.Equal(gotForgot, wantForgot) {
			t.Fatalf("round %d (max %d of %d): forgotten %v, a full sort %v", round, max, n, gotForgot, wantForgot)
		}
	}
}

// BenchmarkPlan is a plan over many tracked pages, most of them never
// pinned: what every Interval costs the service and whatif's planner rows.
//
//	go test -run '^$' -bench Plan -count 5 ./decide/retention/
func BenchmarkPlan(b *testing.B) {
	t0 := time.Unix(1e6, 0)
	p, err := New(Config{Budget: 2000 * 512 * 131072, KVBytesPerToken: 131072})
	if err != nil {
		b.Fatal(err)
	}
	const sessions = 2000
	for s := range sessions {
		keys := make([]string, 50)
		for i := range keys {
			keys[i] = fmt.Sprintf("s%d-p%d", s, i)
		}
		p.Request(t0.Add(time.Duration(s)*time.Millisecond), fmt.Sprint(s), keys, 512)
	}
	at := t0.Add(time.Minute)
	for b.Loop() {
		at = at.Add(DefaultInterval)
		p.Plan(at)
	}
	b.ReportMetric(float64(p.Stats().Tracked), "pages")
}
