package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxTrackedFile is the largest file the repository may track: a larger
// one is a build output or data that belongs compressed in testdata/.
const maxTrackedFile = 1 << 20

// bigFileAllowed are tracked paths allowed past maxTrackedFile, by prefix:
// generated result charts that the docs show.
var bigFileAllowed = []string{"loadtest/results/"}

// Nothing built is tracked: no executable binary, no file over 1 MiB.
func TestTreeTracksNothingBuilt(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "ls-files", "-s").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing tracked to check", err)
	}
	var checked int
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// "<mode> <object> <stage>\t<path>"
		meta, path, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("git ls-files -s: %q", line)
		}
		fi, err := os.Stat(filepath.Join(root, path))
		if err != nil {
			continue // deleted in the work tree, not yet committed
		}
		checked++
		if problem := trackedProblem(path, strings.HasPrefix(meta, "100755"), fi.Size(), head(t, filepath.Join(root, path))); problem != "" {
			t.Errorf("%s: %s", path, problem)
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d tracked files", checked)
	}
}

// trackedProblem says why a tracked file should not be, or "".
func trackedProblem(path string, executable bool, size int64, head []byte) string {
	if isNativeBinary(head) {
		return "a compiled binary is tracked: remove it and cover it in .gitignore"
	}
	if executable && bytes.IndexByte(head, 0) >= 0 {
		return "an executable binary file is tracked"
	}
	if size > maxTrackedFile {
		for _, p := range bigFileAllowed {
			if strings.HasPrefix(path, p) {
				return ""
			}
		}
		return "larger than 1 MiB: keep data gzipped in testdata/, build outputs out of git"
	}
	return ""
}

func isNativeBinary(b []byte) bool {
	for _, magic := range [][]byte{{0x7f, 'E', 'L', 'F'}, {0xcf, 0xfa, 0xed, 0xfe}, {0xfe, 0xed, 0xfa, 0xcf}, []byte("MZ\x90\x00")} {
		if bytes.HasPrefix(b, magic) {
			return true
		}
	}
	return false
}

func head(t *testing.T, path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 8000)
	n, _ := f.Read(b)
	return b[:n]
}

// The check itself can fail: it names a binary, an executable with NUL
// bytes and an oversized file, and lets a script and an allowed chart by.
func TestTrackedProblemCatchesBuildOutputs(t *testing.T) {
	elf := append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...)
	cases := []struct {
		path       string
		executable bool
		size       int64
		head       []byte
		bad        bool
	}{
		{"frontend", true, 10 << 20, elf, true},
		{"tool", false, 4096, elf, true},
		{"blob", true, 100, []byte("ab\x00cd"), true},
		{"data.json", false, 2 << 20, []byte("{}"), true},
		{"scripts/deps.sh", true, 2000, []byte("#!/usr/bin/env bash\n"), false},
		{"loadtest/results/chart.svg", false, 2 << 20, []byte("<svg"), false},
		{"testdata/vectors/x.msgpack", false, 300, []byte{0x82, 0x00}, false},
	}
	for _, c := range cases {
		if got := trackedProblem(c.path, c.executable, c.size, c.head) != ""; got != c.bad {
			t.Errorf("%s: flagged %v, want %v", c.path, got, c.bad)
		}
	}
}
