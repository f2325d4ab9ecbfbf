package actions_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
)

type sglangCase struct {
	Name        string               `json:"name"`
	Layout      schemas.ObjectLayout `json:"layout"`
	Tokens      []uint32             `json:"tokens"`
	PageHashes  []string             `json:"page_hashes"`
	EventHashes []string             `json:"event_block_hashes_int64"`
	ObjectKeys  []string             `json:"object_keys"`
}

func sglangCases(t *testing.T) []sglangCase {
	t.Helper()
	var v struct {
		Cases []sglangCase `json:"cases"`
	}
	if err := json.Unmarshal(readVector(t, "sglang_pages_and_keys.json"), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Cases) == 0 {
		t.Fatal("sglang_pages_and_keys.json has no cases")
	}
	return v.Cases
}

func TestSGLangVectors(t *testing.T) {
	for _, c := range sglangCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			hashes := actions.SGLangPageHashes(c.Tokens, int(c.Layout.PageSize))
			if !slices.Equal(hashes, c.PageHashes) {
				t.Errorf("page hashes\n%q\nwant\n%q", hashes, c.PageHashes)
			}
			if len(c.EventHashes) != len(c.PageHashes) {
				t.Fatalf("vector has %d event hashes for %d pages", len(c.EventHashes), len(c.PageHashes))
			}
			for i, s := range c.EventHashes {
				want, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				if got := actions.SGLangEventHash(c.PageHashes[i]); got != want {
					t.Errorf("event hash of page %d = %d, want %d", i, got, want)
				}
			}
			keys, err := actions.ObjectKeys(&c.Layout, c.Tokens)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, c.ObjectKeys) {
				t.Errorf("object keys\n%q\nwant\n%q", keys, c.ObjectKeys)
			}
		})
	}
}

// A negative event hash (top bit set) is what two's complement must give.
func TestSGLangEventHashSign(t *testing.T) {
	if got := actions.SGLangEventHash("ffffffffffffffff" + "00"); got != -1 {
		t.Errorf("all ones = %d, want -1", got)
	}
	if got := actions.SGLangEventHash("8000000000000000"); got != -1<<63 {
		t.Errorf("top bit = %d, want %d", got, int64(-1<<63))
	}
	for _, bad := range []string{"", "abc", "zzzzzzzzzzzzzzzz", "+fffffffffffffff"} {
		if got := actions.SGLangEventHash(bad); got != 0 {
			t.Errorf("SGLangEventHash(%q) = %d, want 0", bad, got)
		}
	}
}

// Page hashes are chained, so a prompt's hashes are a prefix of those of
// any longer prompt, and a partial trailing page adds none.
func TestSGLangPageHashesPrefix(t *testing.T) {
	c := sglangCases(t)[1]
	ps := int(c.Layout.PageSize)
	full := actions.SGLangPageHashes(c.Tokens, ps)
	for n := range len(c.Tokens) + 1 {
		got := actions.SGLangPageHashes(c.Tokens[:n], ps)
		if !slices.Equal(got, full[:n/ps]) {
			t.Fatalf("%d tokens: %d hashes, not the first %d of the full prompt's", n, len(got), n/ps)
		}
	}
	if got := actions.SGLangPageHashes(c.Tokens, 0); got != nil {
		t.Errorf("page size 0 gave %v", got)
	}
}

func TestObjectKeysTrailingPool(t *testing.T) {
	layout := &schemas.ObjectLayout{PageSize: 2, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: "p",
		Pools: []schemas.LayoutPool{
			{Pool: "kv", Suffixes: []string{"_k"}}, // no hit_policy: all pages
			{Pool: "swa", Suffixes: []string{"_a", "_b"}, HitPolicy: actions.HitTrailingPages, TrailingPages: 5},
		},
	}}
	tokens := []uint32{1, 2, 3, 4, 5} // two full pages
	h := actions.SGLangPageHashes(tokens, 2)
	keys, err := actions.ObjectKeys(layout, tokens)
	if err != nil {
		t.Fatal(err)
	}
	// A trailing pool longer than the prompt covers every page.
	want := []string{
		"p_" + h[0] + "_k", "p_" + h[1] + "_k",
		"p_" + h[0] + "_a", "p_" + h[0] + "_b", "p_" + h[1] + "_a", "p_" + h[1] + "_b",
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys\n%q\nwant\n%q", keys, want)
	}
	if keys, err := actions.ObjectKeys(layout, tokens[:1]); err != nil || len(keys) != 0 {
		t.Fatalf("less than a page: %q, %v; want no keys, no error", keys, err)
	}
}

func TestObjectKeysNoLayout(t *testing.T) {
	good := func() *schemas.ObjectLayout {
		return &schemas.ObjectLayout{PageSize: 16, HicacheObjectLayout: schemas.HicacheObjectLayout{
			KeyPrefix: "p",
			Pools:     []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_k"}, HitPolicy: actions.HitAllPages}},
		}}
	}
	for name, mod := range map[string]func(*schemas.ObjectLayout) *schemas.ObjectLayout{
		"nil":         func(*schemas.ObjectLayout) *schemas.ObjectLayout { return nil },
		"page size 0": func(l *schemas.ObjectLayout) *schemas.ObjectLayout { l.PageSize = 0; return l },
		"no prefix":   func(l *schemas.ObjectLayout) *schemas.ObjectLayout { l.HicacheObjectLayout.KeyPrefix = ""; return l },
		"no pools":    func(l *schemas.ObjectLayout) *schemas.ObjectLayout { l.HicacheObjectLayout.Pools = nil; return l },
		"no suffixes": func(l *schemas.ObjectLayout) *schemas.ObjectLayout {
			l.HicacheObjectLayout.Pools[0].Suffixes = nil
			return l
		},
		"unknown policy": func(l *schemas.ObjectLayout) *schemas.ObjectLayout {
			l.HicacheObjectLayout.Pools[0].HitPolicy = "some"
			return l
		},
		"trailing 0": func(l *schemas.ObjectLayout) *schemas.ObjectLayout {
			l.HicacheObjectLayout.Pools[0].HitPolicy = actions.HitTrailingPages
			return l
		},
	} {
		// Even with no full page: a bad layout is reported, not hidden.
		for _, n := range []int{0, 40} {
			keys, err := actions.ObjectKeys(mod(good()), make([]uint32, n))
			if !errors.Is(err, actions.ErrNoLayout) || keys != nil {
				t.Errorf("%s, %d tokens: %q, %v; want ErrNoLayout", name, n, keys, err)
			}
		}
	}
	if keys, err := actions.ObjectKeys(good(), make([]uint32, 40)); err != nil || len(keys) != 2 {
		t.Fatalf("good layout: %q, %v", keys, err)
	}
}

// 32K tokens at page 64 under a 4-suffix MHA layout: 512 pages, 2048 keys.
func BenchmarkObjectKeys(b *testing.B) {
	layout := &schemas.ObjectLayout{PageSize: 64, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: "prod_Qwen-Qwen3-8B",
		Pools:     []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_0_k", "_0_v", "_1_k", "_1_v"}, HitPolicy: actions.HitAllPages}},
	}}
	tokens := make([]uint32, 32768)
	for i := range tokens {
		tokens[i] = uint32(i*7919) % 151936
	}
	b.SetBytes(int64(4 * len(tokens)))
	b.ReportAllocs()
	for b.Loop() {
		keys, err := actions.ObjectKeys(layout, tokens)
		if err != nil || len(keys) != 2048 {
			b.Fatal(len(keys), err)
		}
	}
}
