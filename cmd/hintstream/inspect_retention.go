package main

import (
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/observe"
)

func printRetention(w io.Writer, v observe.RetentionView) {
	st := v.Stats
	fmt.Fprintf(w, "pinned %d pages, %d of %d budget bytes; %d tracked, %d sessions; %d plans (%d pins, %d renewals, %d releases)\n",
		st.PinnedPages, st.PinnedBytes, st.Budget, st.Tracked, st.Sessions, st.Plans, st.Pins, st.Renewals, st.Releases)
	fmt.Fprintf(w, "learned: first-seen pages reused %.1f%%, turns followed by another %.1f%%, tool calls returning %.1f%%\n",
		100*st.FirstReuseShare, 100*st.NextTurnShare, 100*st.ToolReturnShare)
	printRetentionGroup(w, st.Group)
	fmt.Fprintln(w, "KEY\tDEPTH\tSESSION\tP\tSCORE\tBYTES\tEXPIRES\tREASON")
	for _, p := range v.Pinned {
		sess := p.Session
		if sess == "" {
			sess = "-"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%.2f\t%.3g\t%d\t%s\t%s\n", p.Key, p.Depth, sess, p.Probability, p.Score, p.Bytes,
			p.Expires.UTC().Format(time.RFC3339), p.Reason)
	}
}
