package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"
)

// TestWhatifRefusesBadFlagsBeforeReading: `hintstream whatif` with a
// directory or a pipe for --trace, junk --sweep values, or a --report
// path it cannot write, a junk --l3-pin-budget or --policies, refuses at
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
		// run's own parser: the same values, the same refusals.
		{[]string{"--trace", trace, "--l3-pin-budget", "junk"}, `invalid value "junk" for flag -l3-pin-budget: "junk": want bytes or a share`},
		{[]string{"--trace", trace, "--l3-pin-budget", "0"}, `invalid value "0" for flag -l3-pin-budget: "0": a budget of 0 pins nothing`},
		{[]string{"--trace", trace, "--l3-pin-budget", "150%"}, `invalid value "150%" for flag -l3-pin-budget`},
		{[]string{"--trace", trace, "--l3-pin-budget", "1000000000000"}, "--l3-pin-budget 1000000000000 is more than --l3 432.0 GiB"},
		{[]string{"--trace", trace, "--l3", "64GiB", "--sweep", "l3=1GiB,128GiB", "--l3-pin-budget", "2147483648"},
			`--l3-pin-budget 2147483648 is more than --sweep l3 value "1GiB"`},
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
