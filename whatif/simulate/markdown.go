package simulate

import (
	"fmt"
	"math"
	"strings"

	"github.com/hintstream/hintstream/whatif/workload"
)

// Markdown renders the comparison as a table with a one-line verdict and
// the setting, ready to paste into a report.
func (r Result) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "| run | device-hit tokens | L3-hit tokens | recomputed tokens | prefill cost | saving vs no hints | prefetches (accurate) | pins (pages honoured) |\n")
	fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, m := range []ModeResult{r.NoHints, r.Hintstream, r.Oracle, r.Bound, r.Reachable} {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", m.Mode,
			share(m.DeviceHitTokens, m.PromptTokens), share(m.L3HitTokens, m.PromptTokens),
			share(m.RecomputedTokens, m.PromptTokens), group(int64(math.Round(m.Cost))),
			saving(m.Saving, r.NoHints.Cost), prefetches(m), pins(m))
	}
	fmt.Fprintf(&b, "\nhintstream gets **%s** of the clairvoyant bound's saved prefill (%s of the next-turn oracle's, which is no bound).\n",
		percent(r.OfBound), percent(r.Recovered))
	fmt.Fprintf(&b, "\nhintstream gets **%s** of the hint-reachable bound's saved prefill%s.\n", percent(r.OfReachable), beaten(r.ReachableBeaten))
	fmt.Fprintf(&b, "\n%s", r.Mechanism.Markdown("hintstream"))
	l := r.Links
	fmt.Fprintf(&b, "\nNext-turn links (at least %d whole blocks of the earlier prompt): %d, of them %d forks; gap from the earlier response p10 %.1f s, median %.1f s, p90 %.1f s; median share of the turn's blocks the link covers %.0f%%.\n",
		workload.MinLinkBlocks, l.Links, l.Forks, l.GapP10.Seconds(), l.GapP50.Seconds(), l.GapP90.Seconds(), 100*l.SharedP50)
	fmt.Fprintf(&b, "\n%s", r.Hintstream.Lost.Markdown("hintstream"))
	s := r.Workload
	fmt.Fprintf(&b, "\nSetting: %d requests (%d conversations, %d next turns, %d wake-ups, %d tool calls) over %.0f s; "+
		"%d workers × %d device blocks, L3 %d pages, %d tokens per block; prefill cost = recomputed + %.2f × L3-loaded tokens; "+
		"tool times %s; %s; %s.\n", s.Requests, s.Sessions, s.NextTurns, s.Wakeups, s.ToolCalls, s.Duration.Seconds(),
		r.Workers, r.DeviceBlocks, r.L3Blocks, r.BlockSize, r.Alpha, map[bool]string{true: "announced in the request header", false: "learned by hintstream"}[r.AnnounceToolTime],
		r.transferSetting(), map[bool]string{true: "affinity on: each turn goes to the worker its wake-up's prefetch went to",
			false: "affinity off: the router chooses each turn's worker"}[r.Affinity])
	g := s.Signals
	fmt.Fprintf(&b, "\nSignals: %d of %d turns say how they end (%d in a tool call); next turns announced by the assumed rule (a wake-up ahead of every next turn, each a tool call) %d, at a tool's end %d, at a predicted tool end %d, by a human turn's wake-up %d, not at all %d.\n",
		g.FactTurns, s.Requests, g.FactToolCalls, g.Assumed, g.ToolEnd, g.Predicted, g.Human, g.Unannounced)
	return b.String()
}

func (r Result) transferSetting() string {
	if !r.TransferTime {
		return "prefetches land at once (no transfer time)"
	}
	return fmt.Sprintf("L3 → device loads take %d bytes per token at %.0f GB/s", r.KVBytesPerToken, r.L3Bandwidth/1e9)
}

func share(n, total int64) string {
	if total == 0 {
		return group(n)
	}
	return fmt.Sprintf("%s (%.1f%%)", group(n), 100*float64(n)/float64(total))
}

func saving(s, base float64) string {
	if base == 0 {
		return group(int64(math.Round(s)))
	}
	return fmt.Sprintf("%s (%.1f%%)", group(int64(math.Round(s))), 100*s/base)
}

func prefetches(m ModeResult) string {
	if m.Prefetches == 0 {
		return "–"
	}
	return fmt.Sprintf("%d (%s)", m.Prefetches, percent(m.PrefetchAccuracy))
}

func pins(m ModeResult) string {
	if m.Pins == 0 {
		return "–"
	}
	return fmt.Sprintf("%d (%s)", m.Pins, percent(m.PinsHonoured))
}

func percent(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*f)
}

// group writes n with thin thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func beaten(modes []Mode) string {
	if len(modes) == 0 {
		return ""
	}
	return fmt.Sprintf(" (beaten by %v: affinity changed the devices)", modes)
}
