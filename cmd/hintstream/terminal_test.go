package main

import (
	"bytes"
	"os"
	"testing"
)

// TestIsTerminal: a pipe, a buffer and /dev/null (a character device, but
// no terminal) get no progress bar.
func TestIsTerminal(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if isTerminal(w) || isTerminal(&bytes.Buffer{}) || isTerminal(null) {
		t.Fatal("a pipe, a buffer or /dev/null taken for a terminal")
	}
}
