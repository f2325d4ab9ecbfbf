package actions_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/schemas"
)

// saltedCase is one case of testdata/sglang/salted_pages.json, which
// scripts/sglang-salted-vectors.py writes from SGLang's source with
// hashlib. null (absent) decodes as "", which Namespace reads as absent.
type saltedCase struct {
	Name          string               `json:"name"`
	ExtraKey      *string              `json:"extra_key"`
	CacheSalt     *string              `json:"cache_salt"`
	NamespaceSeed *string              `json:"namespace_seed"`
	Layout        schemas.ObjectLayout `json:"layout"`
	Tokens        []uint32             `json:"tokens"`
	PageHashes    []string             `json:"page_hashes"`
	ObjectKeys    []string             `json:"object_keys"`
}

func saltedPath(t *testing.T) string {
	return filepath.Join(testvectors.Root(t), "testdata", "sglang", "salted_pages.json")
}

func saltedCases(t *testing.T) []saltedCase {
	t.Helper()
	b, err := os.ReadFile(saltedPath(t))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Cases []saltedCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) < 5 {
		t.Fatalf("salted_pages.json has %d cases", len(v.Cases))
	}
	return v.Cases
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestSGLangSaltedVectors(t *testing.T) {
	namespaced := 0
	for _, c := range saltedCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			ns := actions.Namespace{ExtraKey: deref(c.ExtraKey), CacheSalt: deref(c.CacheSalt)}
			if (ns != actions.Namespace{}) {
				namespaced++
			}
			hashes := actions.SGLangPageHashesIn(c.Tokens, int(c.Layout.PageSize), ns)
			if !slices.Equal(hashes, c.PageHashes) {
				t.Fatalf("page hashes\n%q\nwant\n%q", hashes, c.PageHashes)
			}
			keys, err := actions.ObjectKeysIn(&c.Layout, c.Tokens, ns)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, c.ObjectKeys) {
				t.Fatalf("object keys\n%q\nwant\n%q", keys, c.ObjectKeys)
			}
			capped, cut, err := actions.ObjectKeysCapped(&c.Layout, c.Tokens, ns, 0, 0)
			if err != nil || cut != 0 || !slices.Equal(capped, c.ObjectKeys) {
				t.Fatalf("capped keys %q cut %d err %v, want the same keys", capped, cut, err)
			}
			// A namespace changes every page's hash, not only the first.
			plain := actions.SGLangPageHashes(c.Tokens, int(c.Layout.PageSize))
			for i := range plain {
				if (plain[i] == hashes[i]) != (c.NamespaceSeed == nil) {
					t.Fatalf("page %d: unsalted %s, salted %s, seed %v", i, plain[i], hashes[i], c.NamespaceSeed)
				}
			}
		})
	}
	if namespaced < 4 {
		t.Fatalf("%d namespaced cases, want at least 4", namespaced)
	}
}

// The committed vectors are what the script writes now: a change to the
// script is not forgotten in the file, nor an edit of the file by hand.
func TestSGLangSaltedVectorsCurrent(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 (make deps installs it)")
	}
	root := testvectors.Root(t)
	cmd := exec.Command("/usr/bin/python3", "scripts/sglang-salted-vectors.py", "-")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/sglang-salted-vectors.py: %v", err)
	}
	b, err := os.ReadFile(saltedPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Fatal("testdata/sglang/salted_pages.json is not what scripts/sglang-salted-vectors.py writes: run it (make vectors)")
	}
}
