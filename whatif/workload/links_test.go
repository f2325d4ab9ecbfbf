package workload

import (
	"strings"
	"testing"
)

// A request sharing only the one block every request shares is not a
// next turn; one sharing two whole blocks is; a second continuation of
// the same turn is linked as a fork, not refused.
func TestLinksNeedTwoBlocksAndForksAreLinked(t *testing.T) {
	trace := strings.Join([]string{
		`{"timestamp": 0, "input_length": 512, "output_length": 10, "hash_ids": [1]}`,
		`{"timestamp": 1000, "input_length": 1100, "output_length": 10, "hash_ids": [1, 2, 3]}`,
		`{"timestamp": 2000, "input_length": 1100, "output_length": 10, "hash_ids": [1, 4, 5]}`,
		`{"timestamp": 3000, "input_length": 1600, "output_length": 10, "hash_ids": [1, 4, 6, 7]}`,
		`{"timestamp": 4000, "input_length": 1600, "output_length": 10, "hash_ids": [1, 4, 8, 9]}`,
	}, "\n")
	w, err := ReadTrace(strings.NewReader(trace), TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		prev int
		fork bool
	}{{-1, false}, {-1, false}, {-1, false}, {2, false}, {2, true}}
	for i, r := range w.Requests {
		if r.Prev != want[i].prev || r.Fork != want[i].fork {
			t.Fatalf("request %d: prev %d fork %v, want %+v", i, r.Prev, r.Fork, want[i])
		}
	}
	if w.Requests[2].Next != 3 || w.Requests[4].Session != w.Requests[2].Session || !w.Requests[4].HasWakeup {
		t.Fatalf("fork: parent's next %d, sessions %q %q", w.Requests[2].Next, w.Requests[4].Session, w.Requests[2].Session)
	}
	l := w.Links()
	if l.Links != 2 || l.Forks != 1 || l.GapP50 <= 0 {
		t.Fatalf("links %+v", l)
	}
}
