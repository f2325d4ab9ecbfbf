package routing

import (
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// TestSelectBySequenceHashes: a prompt known only by its sequence hashes
// (and its length) gets the candidates, logits and choice the same prompt
// gets from its token ids; at a block size other than its hashes' a
// worker sees no overlap.
func TestSelectBySequenceHashes(t *testing.T) {
	ix := index.New()
	p := prompt(16*10 + 5)
	store(t, ix, key(1, 0), p, 16, 3)
	store(t, ix, key(2, 0), p, 16, 8)
	store(t, ix, key(3, 0), p, 32, 2)
	ws := staticWorkers{worker(1, "m", 16, 1), worker(2, "m", 16, 1), worker(3, "m", 32, 1)}
	s, err := NewSelector(ws, ix, nil)
	if err != nil {
		t.Fatal(err)
	}
	byTokens := &schemas.RequestEvent{RequestID: "r", Model: "m", TokenIDs: p}
	byHashes := &schemas.RequestEvent{RequestID: "r", Model: "m", SequenceHashes: kvevents.PromptHashes(p, 16),
		SequenceBlockSize: 16, PromptTokens: uint32(len(p))}
	_, candsT, err := s.Choose(byTokens)
	if err != nil {
		t.Fatal(err)
	}
	_, candsH, err := s.Choose(byHashes)
	if err != nil {
		t.Fatal(err)
	}
	s16, _ := NewSelector(ws[:2], ix, nil)
	if c, err := s16.Select(byHashes); err != nil || c.Worker != key(2, 0) || c.Overlap != 8 {
		t.Errorf("among the block-size-16 workers: %+v, %v; want worker 2 with 8 blocks", c, err)
	}
	for i := range candsT {
		a, b := candsT[i], candsH[i]
		if a.Worker.WorkerID == 3 {
			if b.Overlap != 0 || a.Overlap != 2 {
				t.Errorf("worker 3 (block size 32): overlap %d by hashes at 16, %d by tokens", b.Overlap, a.Overlap)
			}
			continue
		}
		if a.Overlap != b.Overlap || a.Logit != b.Logit {
			t.Errorf("worker %d: by tokens overlap %d logit %v, by hashes %d %v", a.Worker.WorkerID, a.Overlap, a.Logit, b.Overlap, b.Logit)
		}
	}
	if got := PromptLen(&schemas.RequestEvent{SequenceHashes: []uint64{1, 2}, SequenceBlockSize: 16}); got != 32 {
		t.Errorf("PromptLen without prompt_tokens = %d, want the full blocks' 32", got)
	}
}
