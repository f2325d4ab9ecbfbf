package engine

import (
	"log/slog"
	"runtime"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// TestIndexFlags: --index-capacity and --index-shards reach the index run
// and replay build (Decisions.NewIndex): a pre-sized index
// allocates, at its first event, the lookup part that event lands in for
// its share of the capacity (all of it with one part, 1/64 with 64),
// where a default one allocates a small floor; bad values are refused.
func TestIndexFlags(t *testing.T) {
	parse := parseDecisionFlags
	// allocated is what the first stored event of a new index allocates.
	allocated := func(d Decisions) uint64 {
		ix := d.WithDefaults().NewIndex(slog.New(slog.DiscardHandler))
		ev := kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: 1}, EventID: 1, Kind: schemas.KindStored,
			Blocks: []kvevents.Block{{ExternalHash: 1, LocalHash: 1}}}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if err := ix.Apply(ev); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(ix)
		return after.TotalAlloc - before.TotalAlloc
	}
	plain, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	one, err := parse("--index-capacity", "262144", "--index-shards", "1")
	if err != nil {
		t.Fatal(err)
	}
	many, err := parse("--index-capacity", "262144", "--index-shards", "64")
	if err != nil {
		t.Fatal(err)
	}
	// About 30 bytes per entry of the capacity in the lookup: 7.5 MiB for
	// 262,144 in one part, 120 KiB in one of 64.
	p, s1, s64 := allocated(plain), allocated(one), allocated(many)
	if p > 64<<10 || s1 < 4<<20 || s64 > 1<<20 || s64 < 2*p {
		t.Fatalf("first event allocated %d bytes by default, %d with --index-capacity 262144 --index-shards 1, "+
			"%d with --index-shards 64; want < 64 KiB, > 4 MiB, and between twice the default and 1 MiB", p, s1, s64)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"--index-capacity", "-1"}}, {[]string{"--index-shards", "0"}}, {[]string{"--index-shards", "8192"}},
	} {
		if _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.args[0]) {
			t.Errorf("%v: want an error naming %s, got %v", tc.args, tc.args[0], err)
		}
	}
}
