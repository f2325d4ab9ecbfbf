// Command tracecopies makes a longer Mooncake-format trace from a short
// one: --copies back-to-back copies, each shifted in time to start
// --gap after the previous one ends, and each with its hash_ids moved
// past every id of the copies before it, so no block is shared between
// copies (a copy's conversations and shared prefixes stay within it).
// --limit cuts the result at that many requests (0: all). With
// --same-ids every copy keeps the original ids instead: the trace grows
// and its set of distinct blocks does not (each copy's prompts are
// submitted again), which tells memory that grows with the trace from
// memory that grows with an index of its blocks.
//
// It is how the 12,031-request wall-time figure in loadtest/RESULTS.md
// was made from the 3,993-request synthetic trace (three copies and the
// first 52 requests of a fourth):
//
//	go run ./loadtest/cmd/tracecopies --copies 4 --limit 12031 \
//	    --in ../shared/data/mooncake_synthetic_trace.jsonl --out /tmp/trace12k.jsonl
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
)

type line struct {
	Timestamp    int64    `json:"timestamp"`
	InputLength  int      `json:"input_length"`
	OutputLength int      `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

func main() {
	in := flag.String("in", "", "Mooncake-format trace to copy (required)")
	out := flag.String("out", "", "where to write the result (default stdout)")
	copies := flag.Int("copies", 3, "copies, played one after another")
	limit := flag.Int("limit", 0, "stop after this many requests (0: all)")
	gap := flag.Int64("gap-ms", 1000, "time from a copy's last request to the next copy's first")
	sameIDs := flag.Bool("same-ids", false, "keep every copy's hash_ids as the original's (no new distinct blocks)")
	flag.Parse()
	if err := run(*in, *out, *copies, *limit, *gap, *sameIDs); err != nil {
		fmt.Fprintln(os.Stderr, "tracecopies:", err)
		os.Exit(1)
	}
}

func run(in, out string, copies, limit int, gap int64, sameIDs bool) error {
	if in == "" || copies < 1 || gap < 0 {
		return fmt.Errorf("need --in, --copies >= 1 and --gap-ms >= 0")
	}
	lines, err := read(in)
	if err != nil {
		return err
	}
	if len(lines) == 0 {
		return fmt.Errorf("%s: no requests", in)
	}
	var maxID uint64
	for _, l := range lines {
		for _, id := range l.HashIDs {
			maxID = max(maxID, id)
		}
	}
	shift := maxID + 1
	if sameIDs {
		shift = 0
	}
	first, last := lines[0].Timestamp, lines[len(lines)-1].Timestamp
	span := last - first + gap
	var w io.Writer = os.Stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	n := 0
	for c := range copies {
		for _, l := range lines {
			if limit > 0 && n == limit {
				return bw.Flush()
			}
			l.Timestamp += int64(c) * span
			ids := make([]uint64, len(l.HashIDs))
			for i, id := range l.HashIDs {
				ids[i] = id + uint64(c)*shift
			}
			l.HashIDs = ids
			if err := enc.Encode(l); err != nil {
				return err
			}
			n++
		}
	}
	return bw.Flush()
}

func read(path string) ([]line, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	var out []line
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, l)
	}
	return out, sc.Err()
}
