package schemas

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestSequenceFieldsDecode: a request and a response known only by their
// sequence hashes decode alike from JSON and msgpack, and an event without
// them encodes in msgpack exactly as before (the fast path's shape).
func TestSequenceFieldsDecode(t *testing.T) {
	want := RequestEvent{RequestID: "r1", SessionID: "s", Model: "m",
		SequenceHashes: []uint64{1 << 63, 2, 3}, SequenceBlockSize: 16, PromptTokens: 50,
		SequenceHashScheme: HashSchemeUnsalted, WorkerID: 7, DpRank: 1}
	js, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := want.MarshalMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []struct {
		name string
		data []byte
	}{{"json", js}, {"msgpack", packed}} {
		got, err := DecodeRequest(in.data, "")
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if !slices.Equal(got.SequenceHashes, want.SequenceHashes) || got.SequenceBlockSize != 16 ||
			got.PromptTokens != 50 || got.SequenceHashScheme != HashSchemeUnsalted || got.WorkerID != 7 || got.DpRank != 1 {
			t.Errorf("%s: got %+v", in.name, got)
		}
	}
	resp := ResponseEvent{RequestID: "r1", FinishReason: "tool_calls", SequenceHashes: []uint64{9}, SequenceBlockSize: 64,
		LoraName: "adapter", CacheSalt: "ns"}
	rp, _ := resp.MarshalMsg(nil)
	rj, _ := json.Marshal(resp)
	for _, data := range [][]byte{rp, rj} {
		got, err := DecodeResponse(data, "")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.SequenceHashes, []uint64{9}) || got.SequenceBlockSize != 64 || got.LoraName != "adapter" || got.CacheSalt != "ns" {
			t.Errorf("response: got %+v", got)
		}
	}
	// No sequence fields: the encoding keeps its eight keys.
	plain, _ := (&RequestEvent{RequestID: "r"}).MarshalMsg(nil)
	if plain[0] != 0x88 {
		t.Errorf("plain request map header %#x, want 0x88 (eight keys)", plain[0])
	}
}

// TestSequenceFieldsRefused: hashes that cannot be used are refused with
// a reason of their own, and a prompt of 10^6 hashes is refused as a
// prompt of 10^6 blocks of tokens past MaxTokens.
func TestSequenceFieldsRefused(t *testing.T) {
	big := make([]uint64, 1_000_000)
	for i := range big {
		big[i] = uint64(i) + 1
	}
	for _, tc := range []struct {
		ev     RequestEvent
		reason string
	}{
		{RequestEvent{RequestID: "r", SequenceHashes: []uint64{1}}, "sequence_hashes without sequence_block_size"},
		{RequestEvent{RequestID: "r", SequenceHashes: big, SequenceBlockSize: 16}, "too many sequence_hashes"},
		{RequestEvent{RequestID: "r", PromptTokens: 1<<20 + 1}, "prompt_tokens out of range"},
		{RequestEvent{RequestID: "r", SequenceHashes: []uint64{1}, SequenceBlockSize: 16, SequenceHashScheme: "md5"}, "unknown sequence_hash_scheme"},
	} {
		packed, err := tc.ev.MarshalMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = DecodeRequest(packed, "")
		wantDecodeError(t, err, "request", tc.reason)
		if !slices.Contains(SequenceDecodeReasons, tc.reason) {
			t.Errorf("SequenceDecodeReasons lacks %q", tc.reason)
		}
		js, _ := json.Marshal(tc.ev)
		_, err = DecodeRequest(js, "")
		wantDecodeError(t, err, "request", tc.reason)
		resp := ResponseEvent{RequestID: "r", SequenceHashes: tc.ev.SequenceHashes, SequenceBlockSize: tc.ev.SequenceBlockSize,
			SequenceHashScheme: tc.ev.SequenceHashScheme, PromptTokens: tc.ev.PromptTokens}
		rp, _ := resp.MarshalMsg(nil)
		_, err = DecodeResponse(rp, "")
		wantDecodeError(t, err, "response", tc.reason)
	}
}
