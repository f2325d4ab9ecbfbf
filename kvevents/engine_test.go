package kvevents

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// engArr and engMap build msgpack test inputs: engMap holds key, value,
// key, value... engRaw is spliced in verbatim.
type (
	engArr []any
	engMap []any
	engRaw []byte
)

func engPack(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return msgp.AppendNil(b)
	case string:
		return msgp.AppendString(b, x)
	case []byte:
		return msgp.AppendBytes(b, x)
	case int:
		return msgp.AppendInt64(b, int64(x))
	case int64:
		return msgp.AppendInt64(b, x)
	case uint64:
		return msgp.AppendUint64(b, x)
	case float64:
		return msgp.AppendFloat64(b, x)
	case engRaw:
		return append(b, x...)
	case engArr:
		b = msgp.AppendArrayHeader(b, uint32(len(x)))
		for _, e := range x {
			b = engPack(b, e)
		}
		return b
	case engMap:
		b = msgp.AppendMapHeader(b, uint32(len(x)/2))
		for _, e := range x {
			b = engPack(b, e)
		}
		return b
	}
	panic("engPack: unsupported type")
}

func engEnc(v any) []byte { return engPack(nil, v) }

// engBatch is an array-form batch with dp rank 0.
func engBatch(events ...any) []byte {
	return engEnc(engArr{1.5, engArr(events), 0})
}

// engTokens encodes token ids unsigned, as Python's encoders do.
func engTokens(n int, base int) engArr {
	out := make(engArr, n)
	for i := range out {
		out[i] = uint64(base + i)
	}
	return out
}

func engU32(n int, base int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(base + i)
	}
	return out
}

// engStored is a vLLM array-form BlockStored with medium GPU.
func engStored(hashes engArr, parent any, tokens engArr, bs int) engArr {
	return engArr{"BlockStored", hashes, parent, tokens, bs, nil, "GPU", nil}
}

func mustDecode(t testing.TB, data []byte) []Event {
	t.Helper()
	evs, err := DecodeEngineBatch(data, 7, 42, schemas.Limits{})
	if err != nil {
		t.Fatalf("DecodeEngineBatch: %v", err)
	}
	return evs
}

// wantMalformed checks err is a DecodeError of this adapter with reason.
func wantMalformed(t testing.TB, err error, reason string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want error %q, got nil", reason)
	}
	if !errors.Is(err, schemas.ErrMalformed) {
		t.Fatalf("error %v is not ErrMalformed", err)
	}
	var de *schemas.DecodeError
	if !errors.As(err, &de) || de.Kind != "engine_batch" {
		t.Fatalf("error %v: want DecodeError kind engine_batch", err)
	}
	if reason != "" && de.Reason != reason {
		t.Fatalf("reason %q (%v), want %q", de.Reason, err, reason)
	}
}

func decodeErr(data []byte) error {
	_, err := DecodeEngineBatch(data, 7, 42, schemas.Limits{})
	return err
}

func engReadVector(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(vectorsDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonU64 reads a JSON integer as a block hash: unsigned, or negative as
// two's complement.
func jsonU64(t testing.TB, v any) uint64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	if u, err := strconv.ParseUint(n.String(), 10, 64); err == nil {
		return u
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(i)
}

// expectedFromJSON builds the events engine_batches.json describes, reading
// its JSON independently of the decoder under test.
func expectedFromJSON(t testing.TB, batch any) (evs []Event, dp uint32) {
	t.Helper()
	var rawEvents []any
	var dpVal any
	switch b := batch.(type) {
	case map[string]any:
		rawEvents, dpVal = b["events"].([]any), b["data_parallel_rank"]
	case []any:
		rawEvents, dpVal = b[1].([]any), b[2]
	}
	if dpVal != nil {
		dp = uint32(jsonU64(t, dpVal))
	}
	hashes := func(v any) []uint64 {
		var out []uint64
		for _, h := range v.([]any) {
			out = append(out, jsonU64(t, h))
		}
		return out
	}
	tier := func(v any) schemas.StorageTier {
		if v != nil && v != "GPU" {
			t.Fatalf("vector medium %v: extend the test", v)
		}
		return ""
	}
	for _, re := range rawEvents {
		var tag string
		f := map[string]any{}
		switch e := re.(type) {
		case map[string]any:
			tag, f = e["type"].(string), e
		case []any:
			tag = e[0].(string)
			names := map[string][]string{
				"BlockStored":  {"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium"},
				"BlockRemoved": {"block_hashes", "medium"},
			}[tag]
			for i, name := range names {
				if i+1 < len(e) {
					f[name] = e[i+1]
				}
			}
		}
		switch tag {
		case "BlockStored":
			var toks []uint32
			for _, tok := range f["token_ids"].([]any) {
				toks = append(toks, uint32(jsonU64(t, tok)))
			}
			bs := int(jsonU64(t, f["block_size"]))
			hs := hashes(f["block_hashes"])
			local := LocalBlockHashes(toks, bs)
			if len(local) != len(hs) {
				t.Fatalf("vector has %d hashes and %d full blocks", len(hs), len(local))
			}
			ev := Event{Kind: schemas.KindStored, Tier: tier(f["medium"])}
			if p := f["parent_block_hash"]; p != nil {
				v := jsonU64(t, p)
				ev.ParentHash = &v
			}
			for i, h := range hs {
				ev.Blocks = append(ev.Blocks, Block{ExternalHash: h, LocalHash: local[i]})
			}
			evs = append(evs, ev)
		case "BlockRemoved":
			evs = append(evs, Event{Kind: schemas.KindRemoved, Tier: tier(f["medium"]), Removed: hashes(f["block_hashes"])})
		case "AllBlocksCleared":
			evs = append(evs, Event{Kind: schemas.KindCleared})
		default:
			t.Fatalf("vector tag %q", tag)
		}
	}
	return evs, dp
}

func engEventsEqual(t testing.TB, got, want []Event) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Worker != w.Worker || g.EventID != w.EventID || g.Kind != w.Kind || g.Tier != w.Tier {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
		if (g.ParentHash == nil) != (w.ParentHash == nil) || g.ParentHash != nil && *g.ParentHash != *w.ParentHash {
			t.Errorf("event %d: parent %v, want %v", i, g.ParentHash, w.ParentHash)
		}
		if !slices.Equal(g.Blocks, w.Blocks) {
			t.Errorf("event %d: blocks %+v, want %+v", i, g.Blocks, w.Blocks)
		}
		if !slices.Equal(g.Removed, w.Removed) {
			t.Errorf("event %d: removed %v, want %v", i, g.Removed, w.Removed)
		}
	}
}

func loadEngineBatches(t testing.TB) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(engReadVector(t, "engine_batches.json")))
	dec.UseNumber()
	var all map[string]any
	if err := dec.Decode(&all); err != nil {
		t.Fatal(err)
	}
	return all
}

func TestDecodeEngineBatchVectors(t *testing.T) {
	all := loadEngineBatches(t)
	for _, name := range []string{"engine_batch_array.msgpack", "engine_batch_map.msgpack", "engine_batch_sglang_array.msgpack"} {
		t.Run(name, func(t *testing.T) {
			desc, ok := all[name]
			if !ok {
				t.Fatalf("engine_batches.json does not describe %s", name)
			}
			data := engReadVector(t, name)
			if !IsEngineBatch(data) {
				t.Fatal("IsEngineBatch = false")
			}
			want, dp := expectedFromJSON(t, desc)
			for i := range want {
				want[i].Worker = WorkerKey{WorkerID: 7, DpRank: dp}
				want[i].EventID = 42
			}
			engEventsEqual(t, mustDecode(t, data), want)
		})
	}
	// Spot values typed in by hand, so a shared misreading of the JSON in
	// expectedFromJSON cannot pass unnoticed.
	for _, name := range []string{"engine_batch_array.msgpack", "engine_batch_map.msgpack"} {
		evs := mustDecode(t, engReadVector(t, name))
		if len(evs) != 3 || evs[0].Worker.DpRank != 1 || len(evs[0].Blocks) != 2 ||
			evs[0].Blocks[0].ExternalHash != 9223372036854775813 || evs[0].Blocks[1].ExternalHash != 77 ||
			evs[0].Blocks[0].LocalHash != LocalBlockHashes(engU32(16, 1000), 16)[0] ||
			!slices.Equal(evs[1].Removed, []uint64{77}) || evs[2].Kind != schemas.KindCleared {
			t.Errorf("%s: %+v", name, evs)
		}
	}
}

// SGLang reports each page as int64(first 16 hex chars of its SHA-256 page
// hash); the index must see the same u64 the page key is made of.
func TestDecodeEngineBatchSGLangPageHashes(t *testing.T) {
	var pages struct {
		Cases []struct {
			Name   string `json:"name"`
			Layout struct {
				PageSize int `json:"page_size"`
			} `json:"layout"`
			Tokens     []uint32 `json:"tokens"`
			PageHashes []string `json:"page_hashes"`
			Int64      []string `json:"event_block_hashes_int64"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(engReadVector(t, "sglang_pages_and_keys.json"), &pages); err != nil {
		t.Fatal(err)
	}
	evs := mustDecode(t, engReadVector(t, "engine_batch_sglang_array.msgpack"))
	sawNegative := false
	for _, c := range pages.Cases {
		var hashes engArr
		var want []uint64
		for i, s := range c.Int64 {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			fromPage, err := strconv.ParseUint(c.PageHashes[i][:16], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			if uint64(v) != fromPage {
				t.Fatalf("%s page %d: vector int64 %d is not page hash %s", c.Name, i, v, c.PageHashes[i])
			}
			sawNegative = sawNegative || v < 0
			hashes = append(hashes, v) // msgpack int64, negative when the top bit is set
			want = append(want, fromPage)
		}
		tokens := make(engArr, len(want)*c.Layout.PageSize)
		for i := range tokens {
			tokens[i] = int(c.Tokens[i])
		}
		got := mustDecode(t, engBatch(engArr{"BlockStored", hashes, nil, tokens, c.Layout.PageSize, nil}))
		if len(got) != 1 || len(got[0].Blocks) != len(want) {
			t.Fatalf("%s: %+v", c.Name, got)
		}
		for i, b := range got[0].Blocks {
			if b.ExternalHash != want[i] {
				t.Errorf("%s block %d: %#x, want %#x", c.Name, i, b.ExternalHash, want[i])
			}
		}
		if c.Name == "mha-tp2-page16" {
			for i, b := range evs[0].Blocks {
				if b.ExternalHash != want[i] {
					t.Errorf("sglang vector block %d: %#x, want page hash %#x", i, b.ExternalHash, want[i])
				}
			}
		}
	}
	if !sawNegative {
		t.Fatal("no negative int64 page hash in the vectors; the two's complement path went untested")
	}
}

func TestDecodeEngineBatchBytesHashes(t *testing.T) {
	digest := make([]byte, 32)
	for i := range digest {
		digest[i] = byte(i + 1)
	}
	parent := bytes.Repeat([]byte{0xff}, 32)
	tail := binary.BigEndian.Uint64(digest[24:])
	evs := mustDecode(t, engBatch(
		engStored(engArr{digest, []byte{0x01, 0x02}}, parent, engTokens(32, 0), 16),
		engArr{"BlockRemoved", engArr{digest}, "GPU"},
	))
	if got := evs[0].Blocks[0].ExternalHash; got != tail {
		t.Errorf("32-byte hash: %#x, want last 8 bytes %#x", got, tail)
	}
	if got := evs[0].Blocks[1].ExternalHash; got != 0x0102 {
		t.Errorf("2-byte hash: %#x, want 0x0102", got)
	}
	if evs[0].ParentHash == nil || *evs[0].ParentHash != math.MaxUint64 {
		t.Errorf("bytes parent: %v", evs[0].ParentHash)
	}
	if !slices.Equal(evs[1].Removed, []uint64{tail}) {
		t.Errorf("removed %v", evs[1].Removed)
	}
	// vLLM's int mode sends int.from_bytes(digest, "big") & (2**64-1) for
	// the same block: both modes must name it alike.
	asInt := mustDecode(t, engBatch(engStored(engArr{tail, 0x0102}, uint64(math.MaxUint64), engTokens(32, 0), 16)))
	engEventsEqual(t, asInt, evs[:1])

	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{[]byte{}}})), "empty bytes hash in block_hashes")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{"0x01"}})), "wrong type for block_hashes")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{1.5}})), "wrong type for block_hashes")
}

func TestDecodeEngineBatchParent(t *testing.T) {
	tok := engTokens(16, 5)
	evs := mustDecode(t, engBatch(
		engStored(engArr{1}, nil, tok, 16),
		engStored(engArr{2}, 1, tok, 16),
		engStored(engArr{3}, -2, tok, 16),
		engStored(engArr{4}, uint64(math.MaxUint64), tok, 16),
	))
	want := []*uint64{nil, new(uint64(1)), new(uint64(math.MaxUint64 - 1)), new(uint64(math.MaxUint64))}
	for i, ev := range evs {
		if (ev.ParentHash == nil) != (want[i] == nil) || ev.ParentHash != nil && *ev.ParentHash != *want[i] {
			t.Errorf("event %d: parent %v, want %v", i, ev.ParentHash, want[i])
		}
	}
	// Map form: absent and nil parent are both "no parent".
	m := mustDecode(t, engEnc(engMap{"events", engArr{
		engMap{"type", "BlockStored", "block_hashes", engArr{1}, "token_ids", tok, "block_size", 16},
		engMap{"type", "BlockStored", "block_hashes", engArr{2}, "token_ids", tok, "block_size", 16, "parent_block_hash", 1},
	}}))
	if m[0].ParentHash != nil || m[1].ParentHash == nil || *m[1].ParentHash != 1 {
		t.Errorf("map parents: %v %v", m[0].ParentHash, m[1].ParentHash)
	}
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{1}, "x", tok, 16))), "wrong type for parent_block_hash")
}

func TestDecodeEngineBatchMedium(t *testing.T) {
	for medium, want := range map[string]schemas.StorageTier{
		"GPU": "", "DEVICE": "",
		"CPU": schemas.TierHostPinned, "CPU_PINNED": schemas.TierHostPinned, "CPU_TIER1": schemas.TierHostPinned,
		"CPU_TIER2": schemas.TierDisk, "DISK": schemas.TierDisk, "NVME": schemas.TierDisk, "STORAGE": schemas.TierDisk,
		"EXTERNAL": schemas.TierExternal, "NETWORK": schemas.TierExternal, "REMOTE": schemas.TierExternal, "SHARED": schemas.TierExternal,
	} {
		evs := mustDecode(t, engBatch(
			engArr{"BlockStored", engArr{1}, nil, engTokens(4, 0), 4, nil, medium},
			engArr{"BlockRemoved", engArr{1}, medium},
		))
		if evs[0].Tier != want || evs[1].Tier != want {
			t.Errorf("medium %s: tiers %q %q, want %q", medium, evs[0].Tier, evs[1].Tier, want)
		}
	}
	// nil and absent (SGLang's short arrays, map without the key) are device.
	evs := mustDecode(t, engBatch(
		engArr{"BlockStored", engArr{1}, nil, engTokens(4, 0), 4, nil, nil},
		engArr{"BlockStored", engArr{2}, nil, engTokens(4, 0), 4},
		engArr{"BlockRemoved", engArr{1}},
		engMap{"type", "BlockRemoved", "block_hashes", engArr{2}},
		engArr{"AllBlocksCleared", "CPU"},
	))
	for i, ev := range evs {
		if ev.Tier != "" {
			t.Errorf("event %d: tier %q, want device", i, ev.Tier)
		}
	}
	// An unknown medium decodes to a tier the index counts and ignores.
	for _, m := range []string{"TPU", "gpu"} {
		evs := mustDecode(t, engBatch(engArr{"BlockRemoved", engArr{1}, m}))
		if evs[0].Tier.Valid() || evs[0].Tier == "" {
			t.Errorf("medium %q: tier %q, want an unknown one", m, evs[0].Tier)
		}
		// The index counts and ignores it (index.TestDecodedUnknownMedium).
		if want := schemas.StorageTier("medium:" + m); evs[0].Tier != want {
			t.Errorf("medium %q: tier %q, want %q", m, evs[0].Tier, want)
		}
	}
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{1}, string([]byte{0xff})})), "invalid UTF-8 medium")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{1}, 3})), "wrong type for medium")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved", engArr{1}, []byte("GPU")})), "wrong type for medium")
}

func TestDecodeEngineBatchTags(t *testing.T) {
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockEvicted", engArr{1}})), "unknown event tag")
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockEvicted"})), "unknown event tag")
	wantMalformed(t, decodeErr(engBatch(engMap{"block_hashes", engArr{1}})), "missing type")
	wantMalformed(t, decodeErr(engBatch(engArr{})), "event array has no tag")
	wantMalformed(t, decodeErr(engBatch(engArr{7})), "wrong type for event tag")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockStored", engArr{1}, nil, engTokens(4, 0)})), "BlockStored array too short")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockRemoved"})), "BlockRemoved array too short")
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockRemoved"})), "missing block_hashes")
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockStored", "block_hashes", engArr{}, "block_size", 4})), "missing token_ids")
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockStored", "block_hashes", engArr{}, "token_ids", engArr{}})), "missing block_size")
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockStored", "token_ids", engArr{}, "block_size", 4})), "missing block_hashes")

	// The failing event's index is in the detail, not in the reason.
	err := decodeErr(engBatch(engArr{"AllBlocksCleared"}, engArr{"Nope"}))
	wantMalformed(t, err, "unknown event tag")
	if !strings.Contains(err.Error(), "event 1") {
		t.Errorf("error %q does not name event 1", err)
	}
}

func TestDecodeEngineBatchBatchShape(t *testing.T) {
	tok := engTokens(4, 0)
	stored := engArr{"BlockStored", engArr{1}, nil, tok, 4, nil}
	for name, tc := range map[string]struct {
		data []byte
		dp   uint32
	}{
		"sglang omits dp":       {engEnc(engArr{1.5, engArr{stored}}), 0},
		"nil dp":                {engEnc(engArr{1.5, engArr{stored}, nil}), 0},
		"int ts, extra element": {engEnc(engArr{17, engArr{stored}, 3, "future"}), 3},
		"map dp_rank alias":     {engEnc(engMap{"dp_rank", 2, "events", engArr{stored}}), 2},
		"map unknown keys":      {engEnc(engMap{"ts", 1.5, "x", engMap{"y", engArr{1, 2}}, "events", engArr{stored}, "data_parallel_rank", 4}), 4},
		"map no ts, nil dp":     {engEnc(engMap{"events", engArr{stored}, "data_parallel_rank", nil}), 0},
	} {
		evs, err := DecodeEngineBatch(tc.data, 9, 0, schemas.Limits{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(evs) != 1 || evs[0].Worker != (WorkerKey{WorkerID: 9, DpRank: tc.dp}) || evs[0].EventID != 0 {
			t.Errorf("%s: %+v", name, evs)
		}
	}
	empty := mustDecode(t, engBatch())
	if len(empty) != 0 {
		t.Errorf("empty batch: %+v", empty)
	}
	for reason, data := range map[string][]byte{
		"empty message":                     nil,
		"not a msgpack array or map":        []byte(`{"ts": 1, "events": []}`),
		"batch array needs ts and events":   engEnc(engArr{1.5}),
		"missing events":                    engEnc(engMap{"ts", 1.5}),
		"duplicate events key":              engEnc(engMap{"events", engArr{}, "events", engArr{}}),
		"wrong type for ts":                 engEnc(engArr{"now", engArr{}}),
		"wrong type for events":             engEnc(engArr{1.5, "none"}),
		"wrong type for event":              engBatch(5),
		"wrong type for batch key":          engEnc(engMap{1, 2, "events", engArr{}}),
		"data_parallel_rank out of range":   engEnc(engArr{1.5, engArr{}, -1}),
		"wrong type for data_parallel_rank": engEnc(engArr{1.5, engArr{}, "0"}),
		"trailing bytes after msgpack":      append(engBatch(), 0xc0),
	} {
		wantMalformed(t, decodeErr(data), reason)
	}
	if _, err := DecodeEngineBatch(engEnc(engArr{1.5, engArr{}, int64(math.MaxUint32) + 1}), 1, 1, schemas.Limits{}); err == nil {
		t.Error("dp rank above u32 accepted")
	}
}

func TestIsEngineBatch(t *testing.T) {
	for _, c := range []struct {
		data []byte
		want bool
	}{
		{engBatch(), true},
		{engEnc(engMap{"events", engArr{}}), true},
		{[]byte{0xdc, 0, 0}, true},
		{[]byte{0xdf, 0, 0, 0, 0}, true},
		{[]byte(`{"worker_id":1}`), false},
		{[]byte(` {"worker_id":1}`), false},
		{nil, false},
		{[]byte{0xc0}, false},
	} {
		if got := IsEngineBatch(c.data); got != c.want {
			t.Errorf("IsEngineBatch(% x) = %v", c.data, got)
		}
	}
}

func TestDecodeEngineBatchTruncated(t *testing.T) {
	inputs := [][]byte{
		engReadVector(t, "engine_batch_array.msgpack"),
		engReadVector(t, "engine_batch_map.msgpack"),
		engReadVector(t, "engine_batch_sglang_array.msgpack"),
		engBatch(engStored(engArr{make([]byte, 32)}, []byte{1}, engTokens(16, 70000), 16),
			engArr{"BlockRemoved", engArr{1}, "GPU", 0, "full_attention", engMap{"future", 1}}),
	}
	for _, data := range inputs {
		mustDecode(t, data)
		for n := range len(data) {
			_, err := DecodeEngineBatch(data[:n], 1, 1, schemas.Limits{})
			if err == nil {
				t.Fatalf("prefix of %d/%d bytes decoded without error", n, len(data))
			}
			wantMalformed(t, err, "")
		}
	}
}

func TestDecodeEngineBatchHugeHeaders(t *testing.T) {
	u32 := func(lead byte) engRaw { return engRaw{lead, 0xff, 0xff, 0xff, 0xff} }
	cases := map[string][]byte{
		"events array32":         engEnc(engArr{1.5, u32(0xdd)}),
		"batch array32":          engEnc(u32(0xdd)),
		"batch map32":            engEnc(u32(0xdf)),
		"event map32":            engBatch(u32(0xdf)),
		"event array32":          engBatch(u32(0xdd)),
		"block_hashes array32":   engBatch(engArr{"BlockRemoved", u32(0xdd)}),
		"token_ids array32":      engBatch(engArr{"BlockStored", engArr{1}, nil, u32(0xdd), 16}),
		"skipped value array32":  engBatch(engArr{"AllBlocksCleared", u32(0xdd)}),
		"skipped value map32":    engEnc(engMap{"x", u32(0xdf), "events", engArr{}}),
		"nested skipped arrays":  engBatch(engArr{"AllBlocksCleared", engArr{engArr{engArr{u32(0xdd)}}}}),
		"bin32 hash":             engBatch(engArr{"BlockRemoved", engArr{u32(0xc6)}}),
		"str32 tag":              engBatch(engArr{u32(0xdb)}),
		"events array16 of nils": engEnc(engArr{1.5, engRaw{0xdc, 0xff, 0xff}}),
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const rounds = 20
	for range rounds {
		for name, data := range cases {
			if err := decodeErr(data); err == nil {
				t.Fatalf("%s: decoded", name)
			} else {
				wantMalformed(t, err, "")
			}
		}
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / (rounds * uint64(len(cases)))
	if perCall > 4<<10 {
		t.Fatalf("hostile headers allocated %d bytes per call", perCall)
	}
	// Nesting in a skipped value costs no recursion; past maxSkipDepth it
	// is refused with its reason rather than walked.
	nested := append(bytes.Repeat([]byte{0x91}, maxSkipDepth), 0xc0)
	if _, err := DecodeEngineBatch(engBatch(engArr{"AllBlocksCleared", engRaw(nested)}), 1, 1, schemas.Limits{}); err != nil {
		t.Fatalf("skipped value nested %d deep: %v", maxSkipDepth, err)
	}
	deep := append(bytes.Repeat([]byte{0x91}, 1<<20), 0xc0)
	_, err := DecodeEngineBatch(engBatch(engArr{"AllBlocksCleared", engRaw(deep)}), 1, 1, schemas.Limits{})
	wantMalformed(t, err, "msgpack nested too deeply")
}

func TestDecodeEngineBatchLimits(t *testing.T) {
	many := make(engArr, MaxEngineBatchEvents+1)
	for i := range many {
		many[i] = engArr{"AllBlocksCleared"}
	}
	wantMalformed(t, decodeErr(engBatch(many...)), "too many events")
	if evs := mustDecode(t, engBatch(many[1:]...)); len(evs) != MaxEngineBatchEvents {
		t.Fatalf("%d events", len(evs))
	}
	lim := schemas.Limits{MaxTokens: 8}
	_, err := DecodeEngineBatch(engBatch(engStored(engArr{1}, nil, engTokens(9, 0), 1)), 1, 1, lim)
	wantMalformed(t, err, "too many token_ids")
	_, err = DecodeEngineBatch(engBatch(engArr{"BlockRemoved", engTokens(9, 0)}), 1, 1, lim)
	wantMalformed(t, err, "too many block_hashes")
	_, err = DecodeEngineBatch(engBatch(engStored(engArr{}, nil, engArr{}, 9)), 1, 1, lim)
	wantMalformed(t, err, "block_size too large")
	_, err = DecodeEngineBatch(engBatch(engStored(engArr{1}, nil, engTokens(8, 0), 8)), 1, 1, lim)
	if err != nil {
		t.Fatalf("at the limits: %v", err)
	}
	big := engBatch(engStored(engArr{1}, nil, engTokens(64, 0), 64))
	_, err = DecodeEngineBatch(big, 1, 1, schemas.Limits{MaxBytes: len(big) - 1})
	wantMalformed(t, err, "message too large")
}

func TestDecodeEngineBatchTokenCoverage(t *testing.T) {
	// Exactly covered: 1:1.
	evs := mustDecode(t, engBatch(engStored(engArr{10, 11}, nil, engTokens(32, 500), 16)))
	want := LocalBlockHashes(engU32(32, 500), 16)
	if len(evs[0].Blocks) != 2 || evs[0].Blocks[0].LocalHash != want[0] || evs[0].Blocks[1].LocalHash != want[1] {
		t.Fatalf("covered: %+v", evs[0].Blocks)
	}
	// A partial tail (and a spare full block) is ignored.
	for _, n := range []int{33, 47, 48} {
		evs = mustDecode(t, engBatch(engStored(engArr{10, 11}, nil, engTokens(n, 500), 16)))
		if len(evs[0].Blocks) != 2 || evs[0].Blocks[1].LocalHash != want[1] {
			t.Errorf("%d tokens: %+v", n, evs[0].Blocks)
		}
	}
	// No hashes: an empty store, whatever the tokens.
	evs = mustDecode(t, engBatch(engStored(engArr{}, nil, engTokens(3, 0), 16)))
	if evs[0].Kind != schemas.KindStored || len(evs[0].Blocks) != 0 {
		t.Errorf("empty store: %+v", evs[0])
	}
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10, 11}, nil, engTokens(31, 0), 16))), "token_ids do not cover block_hashes")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engArr{}, 16))), "token_ids do not cover block_hashes")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engTokens(16, 0), 0))), "block_size must be positive")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engTokens(16, 0), -16))), "block_size must be positive")
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockStored", engArr{10}, nil, engTokens(16, 0), "16"})), "wrong type for block_size")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engArr{-1}, 1))), "token id out of range")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engArr{int64(math.MaxUint32) + 1}, 1))), "token id out of range")
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engArr{uint64(math.MaxUint64)}, 1))), "number out of range for token_ids")
	// EAGLE's bigram token_ids are not supported (Dynamo hashes them with
	// block_size+1 windows).
	wantMalformed(t, decodeErr(engBatch(engStored(engArr{10}, nil, engArr{engArr{1, 2}}, 1))), "wrong type for token_ids")
	// Signed encodings of token ids (Go's msgp writes those) are read too.
	signed := engArr{0, 127, 128, 255, 300, 70000, int64(math.MaxUint32)}
	evs = mustDecode(t, engBatch(engStored(engArr{10}, nil, signed, len(signed))))
	if evs[0].Blocks[0].LocalHash != LocalBlockHashes([]uint32{0, 127, 128, 255, 300, 70000, math.MaxUint32}, len(signed))[0] {
		t.Error("signed token encodings")
	}
	// Token ids up to u32 max hash as u32.
	evs = mustDecode(t, engBatch(engStored(engArr{10}, nil, engArr{int64(math.MaxUint32)}, 1)))
	if evs[0].Blocks[0].LocalHash != LocalBlockHashes([]uint32{math.MaxUint32}, 1)[0] {
		t.Error("u32 max token")
	}
}

// vLLM's newest BlockStored carries extra_keys, group_idx and cache-spec
// metadata; hybrid models report each KV-cache group, and only the main
// attention group may reach the index (Dynamo's KvCacheEventFilter).
func TestDecodeEngineBatchGroups(t *testing.T) {
	tok := engTokens(4, 0)
	stored := func(h int, tail ...any) engArr {
		return append(engArr{"BlockStored", engArr{h}, nil, tok, 4, nil, "GPU", nil, engArr{nil}}, tail...)
	}
	evs := mustDecode(t, engBatch(
		stored(1),
		stored(2, 0, "full_attention", nil),
		stored(3, 1, "sliding_window", 128),
		stored(4, 1),
		stored(5, 1, "mla_attention"),
		stored(6, nil, "mamba"),
		stored(7, engArr{nil}, 0, "sink_full_attention", nil, "future"),
		stored(8, 0, "some_future_kind"),
		engArr{"BlockRemoved", engArr{1}, "GPU", 0, "full_attention"},
		engArr{"BlockRemoved", engArr{3}, "GPU", 1, "sliding_window"},
		engArr{"BlockRemoved", engArr{4}, "GPU", 1},
		engMap{"type", "BlockStored", "block_hashes", engArr{9}, "token_ids", tok, "block_size", 4, "group_idx", 1},
		engMap{"type", "BlockStored", "block_hashes", engArr{10}, "token_ids", tok, "block_size", 4, "group_idx", 0,
			"kv_cache_spec_kind", "full_attention", "kv_cache_spec_sliding_window", nil, "extra_keys", engArr{engArr{"salt"}}, "cache_salt", "s"},
		engMap{"type", "BlockRemoved", "block_hashes", engArr{11}, "kv_cache_spec_kind", "sliding_window"},
		engMap{"type", "BlockRemoved", "block_hashes", engArr{12}, "group_idx", nil, "kv_cache_spec_kind", nil},
	))
	var kept []uint64
	for _, ev := range evs {
		if ev.Kind == schemas.KindStored {
			kept = append(kept, ev.Blocks[0].ExternalHash)
		} else {
			kept = append(kept, 100+ev.Removed[0])
		}
	}
	if want := []uint64{1, 2, 5, 7, 101, 10, 112}; !slices.Equal(kept, want) {
		t.Fatalf("kept %v, want %v", kept, want)
	}
	wantMalformed(t, decodeErr(engBatch(engMap{"type", "BlockRemoved", "block_hashes", engArr{1}, "group_idx", "0"})), "wrong type for group_idx")
}

func TestDecodeEngineBatchSelfReferencing(t *testing.T) {
	tok := engTokens(40*4, 0)
	long := make(engArr, 40)
	for i := range long {
		long[i] = i + 1
	}
	longDup := slices.Clone(long)
	longDup[39] = 1
	evs := mustDecode(t, engBatch(
		engStored(engArr{1, 2}, nil, tok, 4),
		engStored(engArr{3, 3}, nil, tok, 4),
		engStored(engArr{4, 5}, 5, tok, 4),
		engStored(longDup, nil, tok, 4),
		engStored(long, 41, tok, 4),
		engStored(long, 40, tok, 4),
		engArr{"BlockRemoved", engArr{7, 7}},
	))
	if len(evs) != 3 || len(evs[0].Blocks) != 2 || len(evs[1].Blocks) != 40 || !slices.Equal(evs[2].Removed, []uint64{7, 7}) {
		t.Fatalf("%+v", evs)
	}
}

// TestDecodeEngineBatchLora: a BlockStored naming a LoRA adapter (and, in
// map form, a cache_salt) hashes its blocks with the block seed Dynamo
// uses for a request naming them; the expected hashes are the independent
// salted vectors. lora_id alone names no adapter.
func TestDecodeEngineBatchLora(t *testing.T) {
	var v saltedVectors
	if err := json.Unmarshal(testvectors.Read(t, "dynamo_block_hashes_salted.json"), &v); err != nil {
		t.Fatal(err)
	}
	toks := func(n int) engArr {
		out := make(engArr, n)
		for i := range out {
			out[i] = uint64(v.Tokens[i])
		}
		return out
	}
	checked := 0
	for _, c := range v.Cases {
		if c.BlockSize != 16 || c.LoraName == nil {
			continue
		}
		n := len(c.Local)
		hashes := make(engArr, n)
		for i := range hashes {
			hashes[i] = uint64(100 + i)
		}
		want := parseHashes(t, c.Local)
		var ev any
		if c.CacheSalt == nil {
			ev = engArr{"BlockStored", hashes, nil, toks(n * 16), 16, 3, "GPU", *c.LoraName}
		} else {
			ev = engMap{"type", "BlockStored", "block_hashes", hashes, "parent_block_hash", nil,
				"token_ids", toks(n * 16), "block_size", 16, "lora_id", 3, "medium", "GPU",
				"lora_name", *c.LoraName, "cache_salt", *c.CacheSalt}
		}
		evs := mustDecode(t, engBatch(ev))
		for i, b := range evs[0].Blocks {
			if b.LocalHash != want[i] {
				t.Fatalf("lora %q salt %v block %d: local hash %d, want %d", *c.LoraName, c.CacheSalt, i, b.LocalHash, want[i])
			}
		}
		checked++
	}
	if checked < 3 {
		t.Fatalf("only %d vector cases checked", checked)
	}
	tok := engTokens(4, 0)
	evs := mustDecode(t, engBatch(engArr{"BlockStored", engArr{1}, nil, tok, 4, 3, "GPU", nil}))
	if evs[0].Blocks[0].LocalHash != LocalBlockHashes(engU32(4, 0), 4)[0] {
		t.Error("lora_id alone changed the local hash")
	}
	wantMalformed(t, decodeErr(engBatch(engArr{"BlockStored", engArr{1}, nil, tok, 4, nil, "GPU", 5})), "wrong type for lora_name")
	// Longer than --max-string: malformed with its reason, so dead-lettered.
	lim := schemas.Limits{MaxString: 8}
	_, err := DecodeEngineBatch(engBatch(engArr{"BlockStored", engArr{1}, nil, tok, 4, nil, "GPU", "adapter-too-long"}), 7, 0, lim)
	wantMalformed(t, err, "lora_name too long")
	_, err = DecodeEngineBatch(engBatch(engMap{"type", "BlockStored", "block_hashes", engArr{1}, "token_ids", tok,
		"block_size", 4, "cache_salt", "tenant-too-long"}), 7, 0, lim)
	wantMalformed(t, err, "cache_salt too long")
}

// BenchmarkDecodeEngineBatch decodes a batch of 16 stored events of 16
// blocks of 16 tokens; vocab= is a batch of one 4-block event whose token
// ids are at random in Qwen's vocabulary (uint16 and uint32 forms mixed),
// as loadtest/speed publishes.
func BenchmarkDecodeEngineBatch(b *testing.B) {
	events := make(engArr, 16)
	var parent any // each event continues the previous one's sequence
	for e := range events {
		hashes := make(engArr, 16)
		for i := range hashes {
			hashes[i] = uint64(e*16+i+1) * 0x9e3779b97f4a7c15
		}
		events[e] = engStored(hashes, parent, engTokens(16*16, e*1000), 16)
		parent = hashes[15]
	}
	data := engEnc(engArr{1.5, events, 0})
	vocab := make(engArr, 4*16)
	for i := range vocab {
		vocab[i] = mix64(uint64(i)) % 151936
	}
	small := engEnc(engArr{1.5, engArr{engStored(engArr{uint64(1), uint64(2), uint64(3), uint64(4)}, uint64(9), vocab, 16)}, 0})
	var dec Decoder
	for _, c := range []struct {
		name   string
		decode func() ([]Event, error)
		want   int
		size   int
	}{
		{"alloc", func() ([]Event, error) { return DecodeEngineBatch(data, 1, 1, schemas.Limits{}) }, 16, len(data)},
		{"reused", func() ([]Event, error) { return dec.EngineBatch(data, 1, 1, schemas.Limits{}) }, 16, len(data)}, // as Engine.KV
		{"vocab=qwen/reused", func() ([]Event, error) { return dec.EngineBatch(small, 1, 1, schemas.Limits{}) }, 1, len(small)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(c.size))
			b.ReportAllocs()
			for b.Loop() {
				evs, err := c.decode()
				if err != nil || len(evs) != c.want {
					b.Fatal(err, len(evs))
				}
			}
		})
	}
}

// mix64 is SplitMix64's finaliser: distinct inputs give distinct,
// random-looking hashes.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
