package evictstudy

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// ProfileRow is what happened to the pages written with the same number
// of earlier uses (0: a page's first write).
type ProfileRow struct {
	PriorUses int // the last row counts this many or more
	// Writes are the page writes with PriorUses earlier uses; Reused of
	// them are used again later.
	Writes, Reused int64
	// BeladyOnly are the later uses that Belady hits and LRU does not,
	// LRUOnly the reverse, both at the profile's capacity.
	BeladyOnly, LRUOnly int64
	// GapP50 and GapP90 are the time to the next use of the Reused
	// writes; BeladyOnlyGapP50 that of the BeladyOnly ones.
	GapP50, GapP90, BeladyOnlyGapP50 time.Duration
}

// Profile is a reuse profile of a workload at one capacity: how the
// chance of another use and the gap to it vary with the uses seen so
// far, which is all that a frequency-based policy can go by, and where
// Belady's extra hits fall among them.
type Profile struct {
	Capacity int
	Rows     []ProfileRow
	// ByReuser splits the later uses by who makes them (Reusers).
	ByReuser [numReusers]ReuserRow
}

// Who reuses a page, relative to the request that used it last.
const (
	// ReuserNextTurn: the request that continues the last user's prompt
	// (its next turn, as the workload links them: what a wake-up or the
	// retention planner's session estimate can announce).
	ReuserNextTurn = iota
	// ReuserSameSession: a later turn or fork of the same conversation.
	ReuserSameSession
	// ReuserOther: a request of another conversation (a shared prefix or
	// a re-submission the workload did not link).
	ReuserOther
	numReusers
)

// ReuserNames name the reusers in tables.
var ReuserNames = [numReusers]string{"next turn of the last user", "other turn of its conversation", "another conversation"}

// ReuserRow counts the later uses made by one kind of reuser: all of
// them, those LRU and Belady hit, and those only Belady hits.
type ReuserRow struct {
	Reuses, LRUHits, BeladyHits, BeladyOnly int64
}

// NewProfile profiles a at capacity pages, rows for 0 to maxPrior prior
// uses (the last row: maxPrior or more).
func NewProfile(a *Accesses, capacity, maxPrior int) *Profile {
	lru := hitMarks(a, NewLRU(a, capacity))
	bel := hitMarks(a, NewBelady(a, capacity))
	next := nextUses(a)
	out := &Profile{Capacity: capacity}
	uses := make([]int32, a.Keys)
	rows := make([]ProfileRow, maxPrior+1)
	gaps := make([][]time.Duration, maxPrior+1)
	belGaps := make([][]time.Duration, maxPrior+1)
	for i, acc := range a.List {
		for j, k := range acc.Keys {
			r := min(int(uses[k]), maxPrior)
			uses[k]++
			row := &rows[r]
			row.Writes++
			n := next[i][j]
			if n == never {
				continue
			}
			row.Reused++
			gap := a.List[n].At - acc.At
			gaps[r] = append(gaps[r], gap)
			// The next use of this page is at request n; find its position.
			pos := slices.Index(a.List[n].Keys, k)
			lb, bb := lru[n][pos], bel[n][pos]
			by := &out.ByReuser[reuser(&acc, &a.List[n])]
			by.Reuses++
			if lb {
				by.LRUHits++
			}
			if bb {
				by.BeladyHits++
			}
			if bb && !lb {
				by.BeladyOnly++
			}
			switch {
			case bb && !lb:
				row.BeladyOnly++
				belGaps[r] = append(belGaps[r], gap)
			case lb && !bb:
				row.LRUOnly++
			}
		}
	}
	for r := range rows {
		rows[r].PriorUses = r
		rows[r].GapP50, rows[r].GapP90 = quantile(gaps[r], 0.5), quantile(gaps[r], 0.9)
		rows[r].BeladyOnlyGapP50 = quantile(belGaps[r], 0.5)
	}
	out.Rows = rows
	return out
}

func reuser(last, next *Access) int {
	switch {
	case last.Next >= 0 && last.Next == next.Request:
		return ReuserNextTurn
	case last.Session != "" && last.Session == next.Session:
		return ReuserSameSession
	}
	return ReuserOther
}

// hitMarks replays a under p and marks, per request, the pages it hit.
func hitMarks(a *Accesses, p Policy) [][]bool {
	out := make([][]bool, len(a.List))
	for i, acc := range a.List {
		m := make([]bool, len(acc.Keys))
		for j, k := range acc.Keys {
			if !p.Contains(k) {
				break
			}
			m[j] = true
		}
		out[i] = m
		p.Write(acc.At, acc.Keys)
	}
	return out
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(int(q*float64(len(d))), len(d)-1)]
}

// Markdown renders the profile.
func (p *Profile) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Reuse by the uses seen so far (capacity %s pages):\n\n", group(int64(p.Capacity)))
	b.WriteString("| earlier uses | page writes | used again | gap to next use p50 / p90 | Belady-only hits | their gap p50 | LRU-only hits |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range p.Rows {
		label := fmt.Sprint(r.PriorUses)
		if i == len(p.Rows)-1 {
			label += "+"
		}
		share := 0.0
		if r.Writes > 0 {
			share = float64(r.Reused) / float64(r.Writes)
		}
		fmt.Fprintf(&b, "| %s | %s | %.1f%% | %s / %s | %s | %s | %s |\n", label, group(r.Writes), 100*share,
			secs(r.GapP50), secs(r.GapP90), group(r.BeladyOnly), secs(r.BeladyOnlyGapP50), group(r.LRUOnly))
	}
	var only int64
	for _, r := range p.ByReuser {
		only += r.BeladyOnly
	}
	b.WriteString("\nReuse by who reuses (pages):\n\n| reuser | later uses | LRU hits | Belady hits | Belady-only hits | share of Belady-only |\n|---|---:|---:|---:|---:|---:|\n")
	for i, r := range p.ByReuser {
		share := 0.0
		if only > 0 {
			share = float64(r.BeladyOnly) / float64(only)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f%% |\n", ReuserNames[i], group(r.Reuses), group(r.LRUHits),
			group(r.BeladyHits), group(r.BeladyOnly), 100*share)
	}
	return b.String()
}

func secs(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }
