package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestByteSizeFlags: every command's byte-size flags are the one type of
// internal/cmdline (BytesVar), so every one of them takes units, on the
// command line and in a config file.
func TestByteSizeFlags(t *testing.T) {
	if code, out, errOut := call("run", "--check-config", "--pin-endpoint", "tcp://127.0.0.1:5557", "--l3-capacity", "384GiB", "--l3-pin-budget", "40%"); code != 0 || !strings.Contains(out, "configuration ok") {
		t.Fatalf("run --l3-capacity 384GiB: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := call("run", "--check-config", "--l3-capacity", "384gib", "--l3-pin-budget", "40%"); code != 2 || !strings.Contains(errOut, "-l3-capacity") || !strings.Contains(errOut, "not a byte size") {
		t.Errorf("run --l3-capacity 384gib: exit %d, %s", code, errOut)
	}
	// A budget in bytes with a unit, checked against the capacity.
	if code, _, errOut := call("run", "--check-config", "--l3-capacity", "1GiB", "--l3-pin-budget", "2GB"); code != 2 || !strings.Contains(errOut, "--l3-pin-budget 2000000000 is more than --l3-capacity 1073741824") {
		t.Errorf("run --l3-pin-budget 2GB over --l3-capacity 1GiB: exit %d, %s", code, errOut)
	}
	cfg := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(cfg, []byte("pin-endpoint: tcp://127.0.0.1:5557\nl3-capacity: 384GiB\nl3-pin-budget: 100GiB\nrequests-max-bytes: 1 GiB\nmax-message-bytes: 4MiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := call("run", "--check-config", "--config", cfg); code != 0 || !strings.Contains(out, "configuration ok") {
		t.Errorf("run --config with sizes: exit %d\n%s%s", code, out, errOut)
	}

	// Every flag in bytes, in every command's help, is of type size.
	byteFlag := regexp.MustCompile(`^-(l3|l3-capacity|max-string|[a-z0-9-]+-bytes)$`)
	seen := 0
	for _, cmd := range docCommands() {
		code, out, _ := call(cmd, "--help-all")
		if code != 0 {
			code, out, _ = call(cmd, "--help")
		}
		if code != 0 {
			t.Fatalf("%s --help: exit %d", cmd, code)
		}
		for _, line := range strings.Split(out, "\n") {
			f := strings.Fields(line)
			if !strings.HasPrefix(line, "  -") || len(f) == 0 || !byteFlag.MatchString(f[0]) {
				continue
			}
			seen++
			if len(f) != 2 || f[1] != "size" {
				t.Errorf("hintstream %s %s: not a byte-size flag (cmdline.BytesVar): %q", cmd, f[0], line)
			}
		}
	}
	if seen < 10 {
		t.Errorf("found %d byte-size flags in the commands' help; the pattern no longer matches them", seen)
	}
}
