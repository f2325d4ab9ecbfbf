package retention

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The plan's partial order (the best pages up to a limit, one pass for
// what it forgets) equals what a full sort of the pages gives, as Plan
// did before: the same pages pinned in the same order, the same
// forgotten. The pages tie often (few values of e and depth), so the key
// decides many places.
func TestBestPagesAndForgottenEqualAFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	now := time.Unix(1e6, 0)
	for round := range 500 {
		n := rng.IntN(300)
		p := &Planner{cfg: Config{MinProbability: 0.05, Horizon: 10 * time.Minute, MaxTracked: n + 1}}
		p.pages = make([]pageStat, n)
		for i := range p.pages {
			e := float64(rng.IntN(5)) / 40
			p.pages[i] = pageStat{key: fmt.Sprintf("k%03d", rng.IntN(1000)) + fmt.Sprint(i), depth: rng.IntN(4),
				last: now.Add(-time.Duration(rng.IntN(80)) * time.Minute), p: e, e: e}
		}
		c := p.pages
		keep := func(x *pageStat) bool { return x.p >= 0.05 }
		dead := func(x *pageStat) bool { return x.p < 0.05/100 && now.Sub(x.last) > 40*time.Minute }
		if round%5 == 0 {
			p.cfg.MaxTracked = rng.IntN(n+1) + 1
		}
		limit := n + 1
		if round%3 == 0 {
			limit = rng.IntN(n+1) + 1
		}
		// The reference: sort all, take the kept in order, forget from
		// the end as Plan's loop did.
		ref := make([]int32, n)
		for i := range ref {
			ref[i] = int32(i)
		}
		slices.SortFunc(ref, func(a, b int32) int { return compareCands(&c[a], &c[b]) })
		var wantOrder, wantForgot []int32
		for _, i := range ref {
			if keep(&c[i]) && len(wantOrder) < limit {
				wantOrder = append(wantOrder, i)
			}
		}
		for k := n - 1; k >= 0; k-- {
			if k >= p.cfg.MaxTracked || dead(&c[ref[k]]) {
				wantForgot = append(wantForgot, ref[k])
				continue
			}
			break
		}
		if got := p.bestPages(limit); !slices.Equal(got, wantOrder) {
			t.Fatalf("round %d (limit %d of %d): best pages %v, a full sort %v", round, limit, n, got, wantOrder)
		}
		gotForgot := p.forgotten(now)
		slices.Sort(gotForgot)
		slices.Sort(wantForgot)
		if !slices.Equal(gotForgot, wantForgot) {
			t.Fatalf("round %d (max %d of %d): forgotten %v, a full sort %v", round, p.cfg.MaxTracked, n, gotForgot, wantForgot)
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
