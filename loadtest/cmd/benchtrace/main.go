// Command benchtrace writes a Mooncake-format trace shaped like
// long-context agentic coding traffic (package loadtest/benchtrace), the
// input of whatif's speed figures in docs/benchmarks.md:
//
//	go run ./loadtest/cmd/benchtrace --requests 6400 --out /tmp/agentic6400.jsonl
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/hintstream/hintstream/loadtest/benchtrace"
)

func main() {
	n := flag.Int("requests", 6400, "requests in the trace")
	seed := flag.Uint64("seed", 1, "random seed")
	out := flag.String("out", "", "where to write the trace (default stdout)")
	facts := flag.Bool("facts", false, "say how each turn ended (finish_reason, tool), as a real agentic trace does")
	flag.Parse()
	w := os.Stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "benchtrace:", err)
			os.Exit(1)
		}
		defer f.Close()
		w = f
	}
	if err := benchtrace.Write(w, benchtrace.Options{Requests: *n, Seed: *seed, Facts: *facts}); err != nil {
		fmt.Fprintln(os.Stderr, "benchtrace:", err)
		os.Exit(1)
	}
}
