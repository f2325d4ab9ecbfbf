// Package testvectors reads the independently made test vectors and the
// Mooncake synthetic trace from the repository's own copy under
// testdata/ (see testdata/README.md), so that a plain clone passes its
// tests. A test that needs them fails, never skips, when they are
// missing. The copy is checked against ../shared/ beside the repository,
// where CI lays the originals, by this package's own test.
package testvectors

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Root is the repository root: the nearest directory above the working
// directory that holds go.mod and testdata/vectors.
func Root(tb testing.TB) string {
	tb.Helper()
	start, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for d := start; ; d = filepath.Dir(d) {
		if isFile(filepath.Join(d, "go.mod")) && isDir(filepath.Join(d, "testdata", "vectors")) {
			return d
		}
		if filepath.Dir(d) == d {
			tb.Fatalf("testdata/vectors not found above %s", start)
		}
	}
}

// Dir returns the vectors directory, testdata/vectors at the repository
// root. A file too large to keep plain is kept gzipped (NAME.gz): read
// vectors with Read, or get a plain file with Path.
func Dir(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(Root(tb), "testdata", "vectors")
}

// Read returns the contents of one vector file, gunzipped when the copy
// is kept as NAME.gz, or fails the test.
func Read(tb testing.TB, name string) []byte {
	tb.Helper()
	return readIn(tb, Dir(tb), name)
}

// Path returns a plain file holding vector file name: the copy itself,
// or a gunzipped one in the test's temporary directory.
func Path(tb testing.TB, name string) string {
	tb.Helper()
	return pathIn(tb, Dir(tb), name)
}

// TracePath returns a plain file holding the Mooncake FAST'25 synthetic
// trace (testdata/data/mooncake_synthetic_trace.jsonl.gz, gunzipped into
// the test's temporary directory).
func TracePath(tb testing.TB) string {
	tb.Helper()
	return pathIn(tb, filepath.Join(Root(tb), "testdata", "data"), TraceName)
}

// TraceName is the synthetic trace's file name, as shared/data has it.
const TraceName = "mooncake_synthetic_trace.jsonl"

func readIn(tb testing.TB, dir, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err == nil {
		return b
	}
	gz, gzErr := os.ReadFile(filepath.Join(dir, name+".gz"))
	if gzErr != nil {
		tb.Fatal(err)
	}
	b, err = gunzip(gz)
	if err != nil {
		tb.Fatalf("%s.gz: %v", name, err)
	}
	return b
}

func pathIn(tb testing.TB, dir, name string) string {
	tb.Helper()
	if p := filepath.Join(dir, name); isFile(p) {
		return p
	}
	p := filepath.Join(tb.TempDir(), name)
	if err := os.WriteFile(p, readIn(tb, dir, name), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

func gunzip(b []byte) ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	return io.ReadAll(zr)
}

func isDir(p string) bool  { fi, err := os.Stat(p); return err == nil && fi.IsDir() }
func isFile(p string) bool { fi, err := os.Stat(p); return err == nil && fi.Mode().IsRegular() }
