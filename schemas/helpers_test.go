package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
)

func vectorsDir(tb testing.TB) string { tb.Helper(); return testvectors.Dir(tb) }

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
