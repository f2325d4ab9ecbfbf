package kvevents

import (
	"reflect"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// sameEvents compares events as the index reads them: a nil and an
// empty slice (of events, blocks or removed hashes) are the same, since a
// reused decoder hands out its emptied scratch where a fresh one has
// nothing.
func sameEvents(a, b []Event) bool {
	if len(a) != len(b) {
		return false
	}
	norm := func(e Event) Event {
		if len(e.Blocks) == 0 {
			e.Blocks = nil
		}
		if len(e.Removed) == 0 {
			e.Removed = nil
		}
		return e
	}
	for i := range a {
		if !reflect.DeepEqual(norm(a[i]), norm(b[i])) {
			return false
		}
	}
	return true
}

func cloneEvents(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = ev.Clone()
	}
	return out
}

// A reused Decoder returns what DecodeEngineBatch does, call after call,
// and a Clone of one call's events outlives the Decoder's next call, which
// overwrites the events themselves.
func TestDecoderEngineBatchReuse(t *testing.T) {
	tok := engTokens(8, 100)
	batches := [][]byte{
		engBatch(engStored(engArr{11, 12}, nil, tok, 4), engArr{"BlockRemoved", engArr{11}, "GPU"}),
		engBatch(engStored(engArr{21, 22}, 12, tok, 4), engArr{"AllBlocksCleared"}),
		engEnc(engMap{"ts", 1.0, "dp_rank", 2, "events", engArr{
			engMap{"type", "BlockStored", "block_hashes", engArr{5, 6}, "parent_block_hash", 4, "token_ids", tok, "block_size", 4, "medium", "DISK"},
		}}),
		engBatch(engArr{"BlockStored"}), // malformed: too short
		engBatch(engStored(engArr{31}, 22, engTokens(4, 7), 4)),
	}
	var dec Decoder
	var kept, keptWant []Event
	for i, data := range batches {
		want, wantErr := DecodeEngineBatch(data, 3, uint64(i+1), schemas.Limits{})
		got, err := dec.EngineBatch(data, 3, uint64(i+1), schemas.Limits{})
		if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
			t.Fatalf("batch %d: error %v, want %v", i, err, wantErr)
		}
		if !sameEvents(got, want) {
			t.Fatalf("batch %d: reused decoder gave\n%+v\nwant\n%+v", i, got, want)
		}
		if !sameEvents(kept, keptWant) {
			t.Fatalf("batch %d: the clone of the last call's events changed:\n%+v\nwant\n%+v", i, kept, keptWant)
		}
		if err == nil {
			kept, keptWant = cloneEvents(got), want
		}
	}
	// The arenas are reused: two decodes of one batch share the memory.
	a, _ := dec.EngineBatch(batches[0], 1, 1, schemas.Limits{})
	b, _ := dec.EngineBatch(batches[0], 1, 1, schemas.Limits{})
	if &a[0].Blocks[0] != &b[0].Blocks[0] {
		t.Error("a reused Decoder allocated new blocks for the same batch")
	}
}

// Decoder.RouterEvent is FromRouterEvent in reused memory.
func TestDecoderRouterEventReuse(t *testing.T) {
	parent := schemas.BlockHash(7)
	evs := []*schemas.RouterEvent{
		{WorkerID: 1, Event: schemas.KvCacheEvent{EventID: 1, DpRank: 2, Data: schemas.KvCacheEventData{Kind: schemas.KindStored,
			Stored: &schemas.KvCacheStoreData{ParentHash: &parent, Blocks: []schemas.StoredBlock{{BlockHash: 8, TokensHash: 80}, {BlockHash: 9, TokensHash: 90}}}}}},
		{WorkerID: 1, StorageTier: schemas.TierDisk, Event: schemas.KvCacheEvent{EventID: 2, Data: schemas.KvCacheEventData{Kind: schemas.KindRemoved,
			Removed: &schemas.KvCacheRemoveData{BlockHashes: []schemas.BlockHash{8, 9}}}}},
		{WorkerID: 2, StorageTier: schemas.TierDevice, Event: schemas.KvCacheEvent{EventID: 3, Data: schemas.KvCacheEventData{Kind: schemas.KindStored,
			Stored: &schemas.KvCacheStoreData{Blocks: []schemas.StoredBlock{{BlockHash: 10, TokensHash: 100}}}}}},
		{WorkerID: 2, Event: schemas.KvCacheEvent{EventID: 4, Data: schemas.KvCacheEventData{Kind: schemas.KindCleared}}},
		nil,
	}
	var dec Decoder
	var kept, keptWant Event
	for i, ev := range evs {
		want := FromRouterEvent(ev)
		got := dec.RouterEvent(ev)
		if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
			t.Fatalf("event %d: %+v, want %+v", i, got, want)
		}
		if !reflect.DeepEqual(kept, keptWant) {
			t.Fatalf("event %d: the clone of the last event changed: %+v, want %+v", i, kept, keptWant)
		}
		kept, keptWant = got[0].Clone(), want
	}
}

// Clone shares no memory with the original.
func TestEventClone(t *testing.T) {
	p := uint64(5)
	ev := Event{Kind: schemas.KindStored, ParentHash: &p, Blocks: []Block{{1, 2}}, Removed: []uint64{3}}
	c := ev.Clone()
	p, ev.Blocks[0], ev.Removed[0] = 6, Block{7, 8}, 9
	if *c.ParentHash != 5 || c.Blocks[0] != (Block{1, 2}) || c.Removed[0] != 3 {
		t.Fatalf("clone %+v changed with its original", c)
	}
	if z := (Event{}).Clone(); z.ParentHash != nil || z.Blocks != nil || z.Removed != nil {
		t.Fatalf("clone of the zero event %+v", z)
	}
}
