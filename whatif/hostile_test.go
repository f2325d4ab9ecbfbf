package whatif

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/whatif/workload"
)

// spoolFile writes body to a file and spools it as `hintstream whatif
// --trace` does.
func spoolFile(t *testing.T, body string, blockSize int, skipBad bool) (Source, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	src, err := SpoolTrace(f, blockSize, skipBad, t.TempDir())
	if err == nil {
		t.Cleanup(func() { src.Workload.Close() })
	}
	return src, err
}

// idList is "[0,1,...,n-1]".
func idList(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(i))
	}
	b.WriteByte(']')
	return b.String()
}

// TestHostileTraces: what `whatif --trace` does with traces built to
// hurt, through the spooled reader the command uses. Each bad one names
// its line, and none costs more than its line bound to find out: a line
// of 10⁶ hash_ids at 512-token blocks is refused by the scanner's limit
// (131 KiB) before it is decoded. Before the bounds, a two-line trace of
// 10⁶ ids and 512·10⁶ tokens a line made the command take 16.9 GB and
// 77 s (docs/whatif.md).
func TestHostileTraces(t *testing.T) {
	first := `{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]}` + "\n"
	for _, c := range []struct {
		name, line, want string
		skipBadToo       bool // --skip-bad cannot pass it either
	}{
		{"10^6 hash_ids", `{"timestamp": 1, "input_length": 1000, "output_length": 5, "hash_ids": ` + idList(1_000_000) + `}`,
			"trace line 2: longer than 131136 bytes", true},
		{"2^20+1 tokens", `{"timestamp": 1, "input_length": 1048577, "output_length": 5, "hash_ids": ` + idList(2049) + `}`,
			"trace line 2: input_length 1048577, output_length 5: more than 1048576 tokens", false},
		{"output 2^30 tokens", `{"timestamp": 1, "input_length": 10, "output_length": 1073741824, "hash_ids": [1]}`,
			"trace line 2: input_length 10, output_length 1073741824: more than 1048576 tokens", false},
		{"2049 hash_ids", `{"timestamp": 1, "input_length": 10, "output_length": 5, "hash_ids": ` + idList(2049) + `}`,
			"trace line 2: 2049 hash_ids: more blocks than 1048576 tokens fill", false},
		{"negative timestamp", `{"timestamp": -1, "input_length": 10, "output_length": 5, "hash_ids": [1]}`,
			"trace line 2: negative timestamp -1", false},
		{"decreasing timestamp", "\r\n" + `{"timestamp": 7, "input_length": 10, "output_length": 5, "hash_ids": [1]}` + "\r\n" +
			`{"timestamp": 3, "input_length": 10, "output_length": 5, "hash_ids": [1]}`,
			"trace line 4: timestamp 3 before the previous line's 7", false},
		{"malformed", `{"timestamp": 1, "input_length": 10,`, "trace line 2: not a JSON object", false},
		{"binary", "\x00\xff\xfe{", "trace line 2: not a JSON object", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := first + c.line + "\n" + `{"timestamp": 90, "input_length": 10, "output_length": 5, "hash_ids": [9]}` + "\n"
			began := time.Now()
			_, err := spoolFile(t, body, DefaultBlockSize, false)
			var le *workload.LineError
			if !errors.As(err, &le) || !errors.Is(err, workload.ErrBadLine) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%v, want a *workload.LineError with %q", err, c.want)
			}
			t.Logf("refused in %v: %v", time.Since(began).Round(time.Microsecond), err)
			src, err := spoolFile(t, body, DefaultBlockSize, true)
			if c.skipBadToo {
				if !errors.As(err, &le) {
					t.Fatalf("--skip-bad passed a line past the scanner's limit: %v", err)
				}
				return
			}
			// --skip-bad loses only the bad line (the decreasing case: its
			// second line).
			want := 2
			if strings.Contains(c.line, "\r\n") {
				want = 3
			}
			if err != nil || src.Skipped != 1 || src.Workload.Len() != want {
				t.Fatalf("--skip-bad: %d requests, %d skipped, %v", src.Workload.Len(), src.Skipped, err)
			}
		})
	}
}

// TestEdgeTraces: CRLF line ends, blank lines and a single request are
// played; an empty file and one of blank lines are refused with
// workload.ErrNoRequests. The ids read back from CRLF lines are the lines' own.
func TestEdgeTraces(t *testing.T) {
	crlf := "\r\n" + `{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [11, 12]}` + "\r\n\r\n" +
		`  {"timestamp": 40, "input_length": 1536, "output_length": 5, "hash_ids": [11, 12, 13]}  ` + "\r\n"
	src, err := spoolFile(t, crlf, DefaultBlockSize, false)
	if err != nil || src.Workload.Len() != 2 {
		t.Fatalf("CRLF trace: %v", err)
	}
	for i, want := range [][]uint64{{11, 12}, {11, 12, 13}} {
		if ids, err := src.IDs(i); err != nil || !slices.Equal(ids, want) {
			t.Fatalf("CRLF record %d read back as %v, %v; want %v", i, ids, err, want)
		}
	}
	if st := src.Workload.Stats(); st.NextTurns != 1 {
		t.Fatalf("the CRLF trace's second line is not the first's next turn: %+v", st)
	}
	one, err := spoolFile(t, `{"timestamp": 5, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]}`, DefaultBlockSize, false)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultCluster()
	c.DeviceBlocks = 64
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, one, Options{Cluster: c, TempDir: t.TempDir()})
	if err != nil || rep.Requests != 1 || len(rep.Points) != 1 || len(rep.Points[0].Runs) == 0 {
		t.Fatalf("one request: %+v, %v", rep, err)
	}
	for _, body := range []string{"", "\n\r\n   \n"} {
		if _, err := spoolFile(t, body, DefaultBlockSize, false); !errors.Is(err, workload.ErrNoRequests) {
			t.Fatalf("trace %q: %v, want workload.ErrNoRequests", body, err)
		}
	}
}

// The caps of the cluster model and of a sweep refuse what would
// overflow a page's bytes or play the trace without end.
func TestHostileClusterOptions(t *testing.T) {
	for _, c := range []func(*Cluster){
		func(c *Cluster) { c.BlockSize = workload.MaxTraceTokens + 1 },
		func(c *Cluster) { c.KVBytesPerToken = MaxKVBytesPerToken + 1 },
	} {
		cl := DefaultCluster()
		c(&cl)
		if err := cl.Validate(); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%+v accepted: %v", cl, err)
		}
	}
	many := "device=" + strings.Repeat("8,", MaxSweepPoints) + "8"
	if _, err := ParseSweep(many); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "at most 64") {
		t.Errorf("a sweep of %d points: %v", MaxSweepPoints+1, err)
	}
	sw, err := ParseSweep("l3=1GiB,1B")
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.Validate(DefaultCluster()); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), `"1B"`) {
		t.Errorf("a sweep point holding no page: %v", err)
	}
}
