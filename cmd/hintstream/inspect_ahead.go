package main

import (
	"fmt"
	"io"

	"github.com/hintstream/hintstream/observe"
)

func printAhead(w io.Writer, v observe.AheadView) {
	st := v.Stats
	fmt.Fprintf(w, "following %d sessions and contexts; %d next turns predicted, %d prefetches queued, %d used\n",
		st.Followed, st.Predicted, st.Queued, st.Used)
	fmt.Fprintf(w, "not sent: %d unlikely, %d over budget, %d late, %d in trial\n", st.Unlikely, st.OverBudget, st.Late, st.Trial)
	ratio := "n/a"
	if st.UsedBytes > 0 {
		ratio = fmt.Sprintf("%.2f", float64(st.WastedBytes)/float64(st.UsedBytes))
	}
	fmt.Fprintf(w, "bytes used %d, wasted %d (%s × used), in flight %d; budget: wasted <= %g × used + %d\n",
		st.UsedBytes, st.WastedBytes, ratio, st.Outstanding, st.MaxWaste, st.AllowanceBytes)
}
