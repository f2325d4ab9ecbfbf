package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// vectorsDir finds shared/vectors beside the repository root (the directory
// holding go.mod): in CI the repo is cloned next to a copy of shared/.
// It fails the test, never skips, when the vectors are missing.
func vectorsDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the package directory")
		}
		dir = parent
	}
	v := filepath.Join(dir, "..", "shared", "vectors")
	if st, err := os.Stat(v); err != nil || !st.IsDir() {
		tb.Fatalf("test vectors missing at %s: %v", v, err)
	}
	return v
}

func readVector(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir(tb), name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// wantDecodeError asserts err is a *DecodeError of the given kind and
// reason that also matches ErrMalformed.
func wantDecodeError(tb testing.TB, err error, kind, reason string) *DecodeError {
	tb.Helper()
	if err == nil {
		tb.Fatalf("want %s error %q, got nil", kind, reason)
	}
	if !errors.Is(err, ErrMalformed) {
		tb.Fatalf("errors.Is(%v, ErrMalformed) = false", err)
	}
	var de *DecodeError
	if !errors.As(err, &de) {
		tb.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	if de.Kind != kind {
		tb.Errorf("Kind = %q, want %q (err %v)", de.Kind, kind, err)
	}
	if reason != "" && de.Reason != reason {
		tb.Errorf("Reason = %q, want %q (err %v)", de.Reason, reason, err)
	}
	return de
}
