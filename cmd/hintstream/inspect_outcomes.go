package main

import (
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/observe"
)

func printOutcomes(w io.Writer, v observe.OutcomesView) {
	fmt.Fprintln(w, "ID\tHINT\tKIND\tSESSION\tTOOL\tWORKER\tTOKENS\tTIMING\tOUTCOME\tAFTER")
	for _, o := range v.Outcomes {
		timing := o.Timing
		if timing == "" {
			timing = "-"
		}
		tool := o.ToolClass
		if tool == "" {
			tool = "-"
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\n", o.ID, o.Hint, o.Kind, o.Session, tool,
			o.WorkerID, o.DpRank, o.Tokens, timing, o.Outcome, o.DecidedAt.Sub(o.SentAt).Round(time.Millisecond))
	}
}
