package snapshots

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// Saved snapshots come back as candidates, the most covered first and the
// own one first on a tie; Cover is the least any snapshot of the current
// incarnation covers, and an older incarnation's is left out.
func TestSaveCandidatesCover(t *testing.T) {
	_, js := natstest.Connect(t, natstest.Start(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := time.Now().UTC().Truncate(time.Microsecond)
	older := now.Add(-time.Hour)
	save := func(s *Store, m Meta, body string) {
		t.Helper()
		if err := s.Save(ctx, m, func(w io.Writer) error { _, err := io.WriteString(w, body); return err }); err != nil {
			t.Fatal(err)
		}
	}
	all := New(js, "", "KV", "", nil)           // a member serving every model
	split := New(js, "", "KV", "/model-a", nil) // one serving a model of its own
	if split.Name() != "kv-index/KV/model-a" || split.AllModelsName() != "kv-index/KV" {
		t.Fatalf("names %q %q", split.Name(), split.AllModelsName())
	}
	save(all, Meta{Covered: 40, Created: now}, "all")
	save(split, Meta{Covered: 40, Created: now, Extra: "KV_B=3@1"}, "split")
	cands := split.Candidates(ctx)
	if len(cands) != 2 || !cands[0].Own || cands[0].Name != split.Name() || cands[0].Seq != 40 ||
		cands[0].Headers.Get(HeaderExtra) != "KV_B=3@1" || !cands[0].Created.Equal(now) {
		t.Fatalf("candidates %+v", cands)
	}
	r, err := cands[0].Store.Get(ctx, cands[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	_, _ = io.Copy(&got, r)
	r.Close()
	if got.String() != "split" {
		t.Fatalf("read back %q", got.String())
	}
	if !cands[0].SameIncarnation(&jetstream.StreamInfo{Created: now}) || cands[0].SameIncarnation(&jetstream.StreamInfo{Created: older}) {
		t.Fatal("incarnation not told apart")
	}
	save(all, Meta{Covered: 25, Created: now}, "all again")
	if c, ok := split.Cover(ctx, now); !ok || c != 25 {
		t.Fatalf("cover %d %v, want 25 (the least covered snapshot of this incarnation)", c, ok)
	}
	if _, ok := split.Cover(ctx, older); ok {
		t.Fatal("snapshots of another incarnation cover an older stream")
	}
	if r, err := split.Reclaim(ctx, time.Minute); err != nil || r.Saves != 0 {
		t.Fatalf("reclaim with nothing interrupted: %+v %v", r, err)
	}
}
