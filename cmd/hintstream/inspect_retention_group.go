package main

import (
	"fmt"
	"io"
	"time"

	"github.com/hintstream/hintstream/decide/retention"
)

// printRetentionGroup says who plans for the group: this member, or the
// leader it follows (whose pins are the ones sent; this member's list
// below is its shadow plan).
func printRetentionGroup(w io.Writer, g *retention.Leadership) {
	switch {
	case g == nil:
		fmt.Fprintln(w, "group: none (this member plans alone over its share of the requests)")
	case g.Leading:
		fmt.Fprintf(w, "group: member %s leads (sends the group's pins) since %s\n", g.Member, g.Since.UTC().Format(time.RFC3339))
	case g.Leader != "":
		fmt.Fprintf(w, "group: member %s follows leader %s (its plans below are not sent)\n", g.Member, g.Leader)
	default:
		fmt.Fprintf(w, "group: member %s follows; no leader seen yet (its plans below are not sent)\n", g.Member)
	}
}
