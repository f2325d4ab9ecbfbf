package whatif

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// untimedJSON is a report's --json without its wall times.
func untimedJSON(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "elapsed_s")
			delete(x, "requests_per_s")
			for k, e := range x {
				x[k] = strip(e)
			}
		case []any:
			for k, e := range x {
				x[k] = strip(e)
			}
		}
		return v
	}
	out, err := json.Marshal(strip(v))
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// sliceOfTrace writes n lines of the synthetic trace from line 1,201 to a file,
// with CRLF line ends on every third, blank and indented lines and a bad
// line among them, and returns its path.
func sliceOfTrace(t *testing.T, n int) string {
	t.Helper()
	f, err := os.Open(tracePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, workload.MaxTraceLineBytes(DefaultBlockSize))
	for k := -1200; k < n && sc.Scan(); k++ {
		if k < 0 {
			continue
		}
		switch k % 7 {
		case 2:
			out.WriteString("\n   ")
		case 5:
			out.WriteString(`{"timestamp": "bad"}` + "\n")
		}
		out.Write(sc.Bytes())
		if k%3 == 0 {
			out.WriteString("\r")
		}
		out.WriteString("\n")
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustReopen(t *testing.T, f *os.File) *os.File {
	t.Helper()
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	return f
}

// racePolicies are the rows a simulation-heavy test plays under -race
// (make test's race pass), where a play is ten times slower: today's,
// today's + affinity, a peer that plays its own mechanism and one on the
// ARC store. Together they take every path the full set takes (engine,
// affinity, peer, ARC); the full set runs without -race in make test's
// sim pass.
func racePolicies(t *testing.T) []simulate.Policy {
	t.Helper()
	return namedPolicies(t, "today's,today's + affinity,Dynamo speculative prefill,today's + affinity on ARC L3")
}

// raceInputPolicies are the rows under -race of the tests that compare
// one input path with another (a spooled trace with one held, the
// streams with the trace): the input is what they check, and two rows
// (engine, affinity) cross it; TestSweepOverL3 keeps the four of
// racePolicies under -race, and the sim pass plays every row.
func raceInputPolicies(t *testing.T) []simulate.Policy {
	t.Helper()
	return namedPolicies(t, "today's,today's + affinity")
}

func namedPolicies(t *testing.T, names string) []simulate.Policy {
	t.Helper()
	ps, err := SelectPolicies(names)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}
