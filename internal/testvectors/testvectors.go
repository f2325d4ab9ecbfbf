// Package testvectors finds the shared, independently made test vectors:
// ../shared/vectors beside the repository (as CI lays it out), or a
// shared/vectors folder above the package being tested. A test that needs
// them fails, never skips, when they are missing.
package testvectors

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the vectors directory or fails the test.
func Dir(tb testing.TB) string {
	tb.Helper()
	start, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	isDir := func(p string) bool { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
	for d := start; ; d = filepath.Dir(d) {
		if c := filepath.Join(d, "shared", "vectors"); isDir(c) {
			return c
		}
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			if c := filepath.Join(d, "..", "shared", "vectors"); isDir(c) {
				return c
			}
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("shared/vectors not found above %s (CI lays it beside the repository)", start)
		}
	}
}

// Read returns the contents of one vector file or fails the test.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(Dir(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
