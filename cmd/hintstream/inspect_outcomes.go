package main

import (
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/observe"
	"github.com/hintstream/hintstream/service"
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

// newOutcomeLines returns a func giving the agent hints' outcomes
// decided since its last call, oldest first, for the demo.
func newOutcomeLines(svc *service.Service) func() []string {
	var last uint64
	return func() []string {
		recs, _ := svc.AgentOutcomes()
		var out []string
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if r.ID <= last {
				continue
			}
			last = r.ID
			timing := ""
			if r.Timing != "" {
				timing = ", " + r.Timing
			}
			out = append(out, fmt.Sprintf("%s %s (%s, worker %d, %d tokens%s): %s", r.Hint, r.Kind, r.Session, r.WorkerID, r.Tokens, timing, r.Outcome))
		}
		return out
	}
}
