package kvevents

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// FuzzDecodeEngineBatch checks that no input panics, that every failure is
// a malformed DecodeError, and that every stored block the decoder returns
// is backed by its event's token_ids, re-read here with msgp's generic
// decoder.
func FuzzDecodeEngineBatch(f *testing.F) {
	for _, name := range []string{"engine_batch_array.msgpack", "engine_batch_map.msgpack", "engine_batch_sglang_array.msgpack"} {
		f.Add(engReadVector(f, name))
	}
	tok := engTokens(8, 100)
	f.Add(engBatch(
		engArr{"BlockStored", engArr{[]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, -1}, uint64(1) << 63, tok, 4, nil, "CPU", "lora", engArr{nil, nil}, 0, "full_attention", nil},
		engArr{"BlockRemoved", engArr{-1}, nil, 1, "sliding_window"},
	))
	f.Add(engEnc(engMap{"ts", 1.0, "dp_rank", 2, "events", engArr{
		engMap{"type", "BlockStored", "block_hashes", engArr{5, 6}, "parent_block_hash", nil, "token_ids", tok, "block_size", 4, "medium", "DISK", "group_idx", 0},
		engMap{"type", "AllBlocksCleared", "medium", "GPU"},
	}}))
	lim := schemas.Limits{MaxTokens: 1 << 12}
	// One Decoder across inputs, as Engine.KV reuses one: it must agree
	// with DecodeEngineBatch, and a clone of its last events must survive
	// its reuse.
	var dec Decoder
	var kept, keptWant []Event
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, err := DecodeEngineBatch(data, 3, 9, lim)
		got, gotErr := dec.EngineBatch(data, 3, 9, lim)
		if (err == nil) != (gotErr == nil) || err != nil && err.Error() != gotErr.Error() || !sameEvents(got, evs) {
			t.Fatalf("reused Decoder: %+v, %v; DecodeEngineBatch: %+v, %v", got, gotErr, evs, err)
		}
		if !sameEvents(kept, keptWant) {
			t.Fatalf("a clone changed when the Decoder was reused: %+v, want %+v", kept, keptWant)
		}
		if err == nil {
			kept, keptWant = cloneEvents(got), evs
		}
		if err != nil {
			var de *schemas.DecodeError
			if !errors.Is(err, schemas.ErrMalformed) || !errors.As(err, &de) || de.Kind != "engine_batch" || de.Reason == "" {
				t.Fatalf("error %v is not a malformed engine_batch DecodeError", err)
			}
			if evs != nil {
				t.Fatal("events returned with an error")
			}
			return
		}
		for _, ev := range evs {
			if ev.Worker.WorkerID != 3 || ev.EventID != 9 {
				t.Fatalf("worker/event id not set: %+v", ev)
			}
			if ev.Kind < schemas.KindStored || ev.Kind > schemas.KindCleared || ev.Tier != "" && !ev.Tier.Valid() && !strings.HasPrefix(string(ev.Tier), "medium:") {
				t.Fatalf("bad kind or tier: %+v", ev)
			}
		}
		checkStoredAgainstReference(t, data, evs)
	})
}

// checkStoredAgainstReference matches each stored Event, in order, to an
// input BlockStored with the same hashes and checks its token_ids cover
// every block and hash to its LocalHash. It trusts the decoder's success:
// every header has been checked against the bytes, so the generic decode
// cannot allocate more than the input backs.
func checkStoredAgainstReference(t *testing.T, data []byte, evs []Event) {
	t.Helper()
	tree, _, err := msgp.ReadIntfBytes(data)
	if err != nil {
		// msgp's generic reader refuses some things the decoder may skip
		// (e.g. non-string map keys in an ignored field).
		return
	}
	var rawEvents []any
	switch b := tree.(type) {
	case []any:
		rawEvents, _ = b[1].([]any)
	case map[string]any:
		rawEvents, _ = b["events"].([]any)
	}
	type stored struct {
		hashes []uint64
		tokens []uint32
		bs     int
		seed   uint64
	}
	var inputs []stored
	for _, re := range rawEvents {
		var tag, hashes, tokens, bs, lora, salt any
		switch e := re.(type) {
		case []any:
			tag = e[0]
			if len(e) >= 5 {
				hashes, tokens, bs = e[1], e[3], e[4]
			}
			if len(e) >= 8 {
				lora = e[7]
			}
		case map[string]any:
			tag, hashes, tokens, bs = e["type"], e["block_hashes"], e["token_ids"], e["block_size"]
			lora, salt = e["lora_name"], e["cache_salt"]
		}
		if tag != "BlockStored" {
			continue
		}
		var s stored
		for _, h := range hashes.([]any) {
			s.hashes = append(s.hashes, refHash(t, h))
		}
		for _, tk := range tokens.([]any) {
			s.tokens = append(s.tokens, uint32(refInt(t, tk)))
		}
		s.bs = int(refInt(t, bs))
		ls, _ := lora.(string)
		ss, _ := salt.(string)
		s.seed = BlockSeed(ls, ss)
		inputs = append(inputs, s)
	}
	next := 0
	for _, ev := range evs {
		if ev.Kind != schemas.KindStored {
			continue
		}
		ext := make([]uint64, len(ev.Blocks))
		for i, b := range ev.Blocks {
			ext[i] = b.ExternalHash
		}
		for next < len(inputs) && !slices.Equal(inputs[next].hashes, ext) {
			next++
		}
		if next == len(inputs) {
			t.Fatalf("stored event %+v matches no input BlockStored", ev)
		}
		in := inputs[next]
		next++
		need := len(in.hashes) * in.bs
		if len(ev.Blocks) > 0 && (in.bs <= 0 || len(in.tokens) < need) {
			t.Fatalf("%d blocks of %d from %d tokens", len(ev.Blocks), in.bs, len(in.tokens))
		}
		if len(ev.Blocks) == 0 {
			continue
		}
		local := LocalBlockHashesSeeded(in.tokens[:need], in.bs, in.seed)
		for i, b := range ev.Blocks {
			if b.LocalHash != local[i] {
				t.Fatalf("block %d: local hash %#x, want %#x", i, b.LocalHash, local[i])
			}
		}
	}
}

func refInt(t *testing.T, v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case uint64:
		return int64(x)
	}
	t.Fatalf("decoder accepted %T as an integer", v)
	return 0
}

func refHash(t *testing.T, v any) uint64 {
	if b, ok := v.([]byte); ok {
		var h uint64
		for _, c := range b[max(0, len(b)-8):] {
			h = h<<8 | uint64(c)
		}
		return h
	}
	return uint64(refInt(t, v))
}
