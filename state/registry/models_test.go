package registry

import (
	"slices"
	"testing"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
)

// WorkersFor follows additions, model changes and deletions, and gives
// a model's workers plus those serving every model, sorted.
func TestWorkersForFollowsChanges(t *testing.T) {
	ctx, js, kv := setup(t)
	r, err := Open(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	natstest.Run(t, r.Run)
	<-r.Ready()
	for _, w := range []schemas.WorkerRecord{rec(5, "a"), rec(2, "a"), rec(3, "b"), rec(9, "")} {
		mustPut(t, ctx, kv, w)
	}
	natstest.Eventually(t, within, func() bool { return len(r.WorkersFor("")) == 4 }, "four records")
	check := func(model string, want ...uint64) {
		t.Helper()
		natstest.Eventually(t, within, func() bool { return slices.Equal(ids(r.WorkersFor(model)), want) },
			"WorkersFor(%q) = %v, want %v", model, ids(r.WorkersFor(model)), want)
	}
	check("a", 2, 5, 9)
	check("b", 3, 9)
	check("nobody-serves-this", 9)
	check("", 2, 3, 5, 9)
	mustPut(t, ctx, kv, rec(5, "b")) // moves from a to b
	check("a", 2, 9)
	check("b", 3, 5, 9)
	if err := kv.Delete(ctx, Key(9)); err != nil {
		t.Fatal(err)
	}
	check("a", 2)
	check("nobody-serves-this")
	check("", 2, 3, 5)
	// Lists for names no worker serves are not cached one by one.
	if n := len(r.models.lists); n > 3 {
		t.Fatalf("%d cached lists for 2 models and the model-less", n)
	}
	// The list agrees with Workers, filtered.
	var want []uint64
	for _, w := range r.Workers() {
		if w.Model == "b" || w.Model == "" {
			want = append(want, w.WorkerID)
		}
	}
	if got := ids(r.WorkersFor("b")); !slices.Equal(got, want) {
		t.Fatalf("WorkersFor(b) %v, Workers filtered %v", got, want)
	}
}
