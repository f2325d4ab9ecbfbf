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
	if code, out, errOut := call("run", "--check-config", "--max-message-bytes", "4MiB"); code != 0 || !strings.Contains(out, "configuration ok") {
		t.Fatalf("run --max-message-bytes 4MiB: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := call("run", "--check-config", "--max-message-bytes", "4mib"); code != 2 || !strings.Contains(errOut, "-max-message-bytes") || !strings.Contains(errOut, "not a byte size") {
		t.Errorf("run --max-message-bytes 4mib: exit %d, %s", code, errOut)
	}
	cfg := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(cfg, []byte("requests-max-bytes: 1 GiB\nmax-message-bytes: 4MiB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := call("run", "--check-config", "--config", cfg); code != 0 || !strings.Contains(out, "configuration ok") {
		t.Errorf("run --config with sizes: exit %d\n%s%s", code, out, errOut)
	}

	// Every flag in bytes, in every command's help, is of type size.
	byteFlag := regexp.MustCompile(`^-(l3|max-string|[a-z0-9-]+-bytes)$`)
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
