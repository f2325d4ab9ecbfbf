package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCopies: copies are shifted in time; their ids are moved past the
// original's, or kept with sameIDs.
func TestCopies(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(`{"timestamp":0,"input_length":600,"output_length":2,"hash_ids":[0,1]}
{"timestamp":500,"input_length":512,"output_length":2,"hash_ids":[0]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, same := range []bool{false, true} {
		out := filepath.Join(dir, "out.jsonl")
		if err := run(in, out, 2, 3, 1000, same); err != nil {
			t.Fatal(err)
		}
		got, err := read(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[2].Timestamp != 1500 {
			t.Fatalf("same-ids %v: %d lines, third at %d; want 3, at 1500", same, len(got), got[2].Timestamp)
		}
		want := uint64(2) // past ids 0 and 1
		if same {
			want = 0
		}
		if got[2].HashIDs[0] != want || got[2].HashIDs[1] != want+1 {
			t.Fatalf("same-ids %v: third copy's ids %v, want from %d", same, got[2].HashIDs, want)
		}
	}
}
