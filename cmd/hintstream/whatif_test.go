package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/internal/testvectors"
)

// TestWhatifRefusesBadFlagsBeforeReading: `hintstream whatif` with a
// directory or a pipe for --trace, junk --sweep values, or a --report
// path it cannot write, a removed flag or a junk --policies, refuses at
// once, naming the flag, before it reads the trace. The trace is the
// full synthetic one (3,993 requests), whose run takes seconds: before,
// --report under a regular file failed only after the run (4.9 s on 2
// cores), with "whatif: report: mkdir ...".
// Tests run as root, so "unwritable" is a path under a regular file
// (ENOTDIR), which no permission bit lets root pass.
func TestWhatifRefusesBadFlagsBeforeReading(t *testing.T) {
	trace := testvectors.TracePath(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace", dir}, "--trace " + dir + ": not a regular file: is a directory"},
		{[]string{"--trace", fifo}, "--trace " + fifo + ": not a regular file"},
		{[]string{"--trace", filepath.Join(dir, "none")}, "--trace: stat"},
		{[]string{"--trace", trace, "--sweep", "junk"}, `--sweep: whatif: invalid option: sweep "junk"`},
		{[]string{"--trace", trace, "--sweep", "l3=1GiB,,2GiB"}, `--sweep: whatif: invalid option: sweep l3 value ""`},
		{[]string{"--trace", trace, "--sweep", "device=1e99"}, `--sweep: whatif: invalid option: sweep device value "1e99"`},
		{[]string{"--trace", trace, "--sweep", "bandwidth=-1GB/s"}, `--sweep: whatif: invalid option: sweep bandwidth value "-1GB/s"`},
		{[]string{"--trace", trace, "--sweep", "l3=1GiB,1B"}, `--sweep: sweep l3 value "1B"`},
		{[]string{"--trace", trace, "--sweep", "device=" + strings.Repeat("8,", 64) + "8"}, "--sweep: whatif: invalid option: sweep of 65 values (at most 64"},
		{[]string{"--trace", trace, "--report", filepath.Join(file, "out")}, "--report: mkdir " + file + ": not a directory"},
		{[]string{"--trace", trace, "--block-size", "2000000"}, "--block-size 2000000 (want 1 … 1048576)"},
		{[]string{"--trace", trace, "--l3-pin-budget", "40%"}, "flag --l3-pin-budget was removed: the retention planner"},
		{[]string{"--trace", trace, "--workload", "agent"}, "give one of --trace FILE, --workload NAME or --from-streams"},
		{[]string{"--workload", "chat"}, `--workload "chat": want agent or sessions`},
		{[]string{"--trace", trace, "--tool-signal", "soon"}, `--tool-signal "soon"`},
		{[]string{"--trace", trace, "--human-wakeup-share", "2"}, "--human-wakeup-share 2"},
		{[]string{"--trace", trace, "--policies", "today's,nope"}, `--policies: no policy "nope" (want names separated by commas from "today's"`},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var out, errb bytes.Buffer
		began := time.Now()
		err := whatifCmd(ctx, c.args, &out, &errb)
		took := time.Since(began)
		cancel()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
			continue
		}
		// A run of the trace takes seconds; a refusal before reading it,
		// milliseconds (generous for -race beside other tests).
		if took > 2*time.Second || out.Len() > 0 {
			t.Errorf("%q: refused after %v with %d bytes of report", c.args, took, out.Len())
		}
		t.Logf("%q: refused in %v: %v", c.args, took.Round(time.Microsecond), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Fatalf("the refusals left files behind: %v", entries)
	}
}

// TestWhatifReadsARequestTraceFile: `whatif --trace` on a file of Dynamo
// request-trace records (the stand-in's, as the file sink writes them,
// gzip) tells the format from the first record and reports the trace's
// requests, sessions and next turns at its trace_block_size and serving
// workers, as a table and as --json.
func TestWhatifReadsARequestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dynamo-request-trace")
	if err := dynamotrace.WriteFile(path, true, 16, dynamotrace.Sessions(dynamotrace.SessionsConfig{Sessions: 5,
		Turns: 4, BlockSize: 32, StartMs: 1_700_000_000_000, Workers: 3, Payloads: true})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	if err := whatifCmd(ctx, []string{"--trace", path, "--json", "--policies", "today's"}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	var rep struct {
		Requests      int `json:"requests"`
		Conversations int `json:"conversations"`
		NextTurns     int `json:"next_turns"`
		Cluster       struct {
			Workers   int `json:"workers"`
			BlockSize int `json:"block_size"`
		} `json:"cluster"`
		Points []json.RawMessage `json:"points"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %.300s", err, out.String())
	}
	if rep.Requests != 20 || rep.Conversations != 5 || rep.NextTurns != 15 || rep.Cluster.Workers != 3 ||
		rep.Cluster.BlockSize != 32 || len(rep.Points) != 1 {
		t.Fatalf("report %+v", rep)
	}
	out.Reset()
	if err := whatifCmd(ctx, []string{"--trace", path, "--policies", "today's"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "20 requests") || !strings.Contains(out.String(), path) {
		t.Fatalf("table:\n%s", out.String())
	}
	if err := whatifCmd(ctx, []string{"--trace", path, "--block-size", "512"}, &out, &errb); err == nil ||
		!strings.Contains(err.Error(), "trace_block_size 32") {
		t.Fatalf("--block-size against the trace's: %v", err)
	}
}
