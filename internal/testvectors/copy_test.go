package testvectors

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The repository's copy under testdata/ holds exactly what ../shared/
// beside the repository holds (where CI lays the originals): the same
// files with the same bytes, a gzipped copy counting as its contents.
// Without ../shared there is nothing to compare, and the test says so.
func TestCopyEqualsShared(t *testing.T) {
	root := Root(t)
	shared := filepath.Join(root, "..", "shared")
	if !isDir(filepath.Join(shared, "vectors")) {
		t.Skipf("no %s beside the repository: the copy in testdata/ is used as it is", shared)
	}
	for _, sub := range []string{"vectors", "data"} {
		orig, copyDir := filepath.Join(shared, sub), filepath.Join(root, "testdata", sub)
		want := names(t, orig)
		got := names(t, copyDir)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("testdata/%s holds %v, ../shared/%s holds %v", sub, got, sub, want)
		}
		for _, n := range want {
			a, err := os.ReadFile(filepath.Join(orig, n))
			if err != nil {
				t.Fatal(err)
			}
			if b := readIn(t, copyDir, n); !bytes.Equal(a, b) {
				t.Errorf("testdata/%s/%s differs from ../shared/%s/%s (%d against %d bytes): copy it again (testdata/README.md)", sub, n, sub, n, len(b), len(a))
			}
		}
	}
}

// names lists a directory's files, a .gz copy under its plain name.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		if e.Type().IsRegular() && e.Name() != "README.md" {
			out = append(out, strings.TrimSuffix(e.Name(), ".gz"))
		}
	}
	sort.Strings(out)
	return out
}

func TestReadGunzipsAndPathMaterialises(t *testing.T) {
	b := Read(t, "dynamo_cost_cases.json")
	if !bytes.HasPrefix(b, []byte(`{"about"`)) {
		t.Fatalf("dynamo_cost_cases.json starts %q", b[:min(len(b), 20)])
	}
	p := Path(t, "dynamo_cost_cases.json")
	if c, err := os.ReadFile(p); err != nil || !bytes.Equal(c, b) {
		t.Fatalf("Path: %v, %d bytes against %d", err, len(c), len(b))
	}
	tr, err := os.ReadFile(TracePath(t))
	if err != nil || bytes.Count(tr, []byte("\n")) != 3993 {
		t.Fatalf("trace: %v, %d lines", err, bytes.Count(tr, []byte("\n")))
	}
}
