package whatif

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/race"
	"github.com/hintstream/hintstream/whatif/simulate"
	"github.com/hintstream/hintstream/whatif/workload"
)

// A trace spooled to disk (SpoolTrace: requests and events read back a
// stretch at a time, ids from the file) gives the report, every field
// but the timings, of the same trace held in memory (ReadTrace and
// FromRecords): bad lines skipped alike, with every policy, and at each
// point of a sweep. The spool's files are gone after Close.
func TestRunOnASpooledTraceEqualsHoldingIt(t *testing.T) {
	n := 900
	var policies []simulate.Policy // every row
	if race.Enabled {              // 900 and every row run without -race (make test's sim pass)
		n, policies = 300, raceInputPolicies(t)
	}
	p := sliceOfTrace(t, n)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := workload.ReadRecords(f, 512, true)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := SpoolTrace(mustReopen(t, f), 512, true, dir)
	if err != nil {
		t.Fatal(err)
	}
	if src.Skipped != tr.Skipped || src.FirstSkipped.Error() != tr.FirstSkipped.Error() || src.Workload.Len() != len(tr.Records) {
		t.Fatalf("spooled %d requests, skipped %d (%v); read %d, skipped %d (%v)", src.Workload.Len(), src.Skipped, src.FirstSkipped,
			len(tr.Records), tr.Skipped, tr.FirstSkipped)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := DefaultCluster()
	c.DeviceBlocks, c.L3Bytes = 400, 2<<30
	sw, err := ParseSweep("l3=1GiB,8GiB")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{{Cluster: c, Policies: policies}, {Cluster: c, Sweep: &sw, TempDir: dir, Policies: policies}} {
		held, err := Run(ctx, Source{Name: "slice", Records: tr.Records, Skipped: tr.Skipped, FirstSkipped: tr.FirstSkipped}, o)
		if err != nil {
			t.Fatal(err)
		}
		spooled := src
		spooled.Name = "slice"
		read, err := Run(ctx, spooled, o)
		if err != nil {
			t.Fatal(err)
		}
		if a, b := untimedJSON(t, held), untimedJSON(t, read); a != b {
			t.Fatalf("sweep %v: the spooled trace changed the report\nheld    %s\nspooled %s", o.Sweep != nil, a, b)
		}
	}
	if err := src.Workload.Close(); err != nil {
		t.Fatal(err)
	}
	left, err := os.ReadDir(dir)
	if err != nil || len(left) != 0 {
		t.Fatalf("left in the spool directory: %v (%v)", left, err)
	}
}

// SpoolTrace fails as ReadTrace does: a bad line is named (without
// skipBad), a trace of bad lines only has no requests; and a trace
// changed under a spooled run fails the run naming the request.
func TestSpoolTraceErrors(t *testing.T) {
	p := sliceOfTrace(t, 300)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	_, werr := workload.ReadRecords(f, 512, false)
	_, err = SpoolTrace(mustReopen(t, f), 512, false, dir)
	var le *workload.LineError
	if werr == nil || err == nil || !errors.As(err, &le) || err.Error() != werr.Error() {
		t.Fatalf("spooling a trace with a bad line: %v; reading it: %v", err, werr)
	}
	bad := strings.NewReplacer(`"timestamp"`, `"timestanp"`).Replace(mustRead(t, p))
	bp := p + ".bad"
	if err := os.WriteFile(bp, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	bf, err := os.Open(bp)
	if err != nil {
		t.Fatal(err)
	}
	defer bf.Close()
	if _, err := SpoolTrace(bf, 512, true, dir); !errors.Is(err, workload.ErrNoRequests) {
		t.Fatalf("a trace of bad lines: %v, want workload.ErrNoRequests", err)
	}
	src, err := SpoolTrace(mustReopen(t, f), 512, true, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Workload.Close()
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(mustRead(t, p), `"hash_ids"`, `"hash_idz"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), src, Options{Cluster: DefaultCluster()})
	if err == nil || !strings.Contains(err.Error(), "request 0's block ids") || !strings.Contains(err.Error(), "read back differs") {
		t.Fatalf("err %v, want one naming request 0 read back", err)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
