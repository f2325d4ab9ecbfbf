package whatif

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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
	sc.Buffer(nil, maxLine)
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

// A trace whose ids are read back from the file as the play needs them
// (Source.IDs) gives the report, every field but the timings, of the
// same trace held in memory: with every policy, and at each point of a
// sweep (each point reads them again).
func TestRunReadingIDsBackFromTheTraceEqualsHoldingThem(t *testing.T) {
	p := sliceOfTrace(t, 900)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadTrace(f, 512, true)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Skipped == 0 || len(tr.Records) != 900 {
		t.Fatalf("read %d records, skipped %d: want 900 and some", len(tr.Records), tr.Skipped)
	}
	ids := tr.IDs(f, 512)
	for i, r := range tr.Records {
		got, err := ids(i)
		if err != nil || !slices.Equal(got, r.HashIDs) {
			t.Fatalf("record %d read back: %v, %v; want %v", i, got, err, r.HashIDs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := DefaultCluster()
	c.DeviceBlocks, c.L3Bytes = 400, 2<<30
	sw, err := ParseSweep("l3=1GiB,8GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Cluster: c}, {Cluster: c, Sweep: &sw}} {
		held, err := Run(ctx, Source{Name: "slice", Records: tr.Records}, o)
		if err != nil {
			t.Fatal(err)
		}
		read, err := Run(ctx, Source{Name: "slice", Records: tr.Records, IDs: tr.IDs(f, 512)}, o)
		if err != nil {
			t.Fatal(err)
		}
		saved := 0
		for _, r := range held.Points[0].Runs {
			if r.Kind == "policy" && r.Saving > 0 {
				saved++
			}
		}
		if saved == 0 {
			t.Fatalf("no policy saved anything: the comparison shows little")
		}
		if a, b := untimedJSON(t, held), untimedJSON(t, read); a != b {
			t.Fatalf("sweep %v: reading ids back changed the report\nheld %s\nread %s", o.Sweep != nil, a, b)
		}
	}
	// The records are the caller's still: Run dropped its workload's ids,
	// not theirs.
	if tr.Records[0].HashIDs == nil {
		t.Fatal("Run dropped the caller's record ids")
	}
}

// A trace that changed after it was read fails the run with an error
// naming the record, rather than playing other prompts.
func TestRunFailsWhenTheTraceChangedUnderIt(t *testing.T) {
	p := sliceOfTrace(t, 300)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadTrace(f, 512, false)
	if err == nil {
		t.Fatal("a bad line read without --skip-bad")
	}
	if tr, err = ReadTrace(mustReopen(t, f), 512, true); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), `"hash_ids"`, `"hash_idz"`, -1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), Source{Name: "slice", Records: tr.Records, IDs: tr.IDs(f, 512)}, Options{Cluster: DefaultCluster()})
	if err == nil || !strings.Contains(err.Error(), "request 0's block ids") || !strings.Contains(err.Error(), "read back differs") {
		t.Fatalf("err %v, want one naming request 0 read back", err)
	}
}

func mustReopen(t *testing.T, f *os.File) *os.File {
	t.Helper()
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	return f
}
