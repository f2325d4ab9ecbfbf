package actions

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

func layoutOf(pageSize uint32, suffixes int) *schemas.ObjectLayout {
	sufs := make([]string, suffixes)
	for i := range sufs {
		sufs[i] = fmt.Sprintf("_%d_k", i)
	}
	return &schemas.ObjectLayout{PageSize: pageSize, HicacheObjectLayout: schemas.HicacheObjectLayout{
		KeyPrefix: "qwen3-8b", Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: sufs, HitPolicy: HitAllPages}}}}
}

func seqTokens(n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = uint32(i*7 + 3)
	}
	return t
}

// allocated runs f and returns the bytes it allocated.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestObjectKeysCapped (issue 26, finding 2): the crafted layout (20,000
// suffixes, page_size 1) on a 5,000-token prompt, which made each member
// allocate ~7 GB, is cut to the leading page whose keys fit and
// allocates a few MB; a legitimate 100k-token prompt with 16 suffixes
// (25,120 keys) is not cut; a layout whose one page is over the cap
// gives ErrPinOverCap; the kept keys are ObjectKeys' of the cut prompt.
func TestObjectKeysCapped(t *testing.T) {
	var keys []string
	var cut int
	var err error
	n := allocated(func() { keys, cut, err = ObjectKeysCapped(layoutOf(1, 20000), seqTokens(5000), Namespace{}, 0, 0) })
	if err != nil || len(keys) != 20000 || cut != 4999 {
		t.Fatalf("crafted layout: %d keys, cut %d, %v; want 20000 keys of 1 page, 4999 cut", len(keys), cut, err)
	}
	if n > 16<<20 {
		t.Fatalf("crafted layout allocated %d bytes, over 16 MiB", n)
	}
	t.Logf("crafted layout: %d keys, %d bytes allocated", len(keys), n)

	keys, cut, err = ObjectKeysCapped(layoutOf(64, 16), seqTokens(100_000), Namespace{}, 0, 0)
	if err != nil || cut != 0 || len(keys) != 100_000/64*16 {
		t.Fatalf("100k tokens, 16 suffixes: %d keys, cut %d, %v", len(keys), cut, err)
	}

	// Cut by bytes: 10 pages of 4 keys, room for 7 pages' bytes.
	l := layoutOf(16, 4)
	full, err := ObjectKeys(l, seqTokens(160))
	if err != nil {
		t.Fatal(err)
	}
	perPage := 0
	for _, k := range full[:4] {
		perPage += len(k)
	}
	keys, cut, err = ObjectKeysCapped(l, seqTokens(160), Namespace{}, 0, 7*perPage+perPage/2)
	if err != nil || cut != 3 || len(keys) != 28 {
		t.Fatalf("byte cap: %d keys, cut %d, %v; want 28 keys, 3 pages cut", len(keys), cut, err)
	}
	for i := range keys {
		if keys[i] != full[i] {
			t.Fatalf("cut key %d = %s, want the leading pages' %s", i, keys[i], full[i])
		}
	}
	// Cut by keys.
	if keys, cut, err = ObjectKeysCapped(l, seqTokens(160), Namespace{}, 10, 0); err != nil || cut != 8 || len(keys) != 8 {
		t.Fatalf("key cap: %d keys, cut %d, %v", len(keys), cut, err)
	}
	// A trailing pool counts only its pages.
	l.HicacheObjectLayout.Pools = append(l.HicacheObjectLayout.Pools,
		schemas.LayoutPool{Pool: "state", Suffixes: []string{"_s"}, HitPolicy: HitTrailingPages, TrailingPages: 2})
	if keys, cut, err = ObjectKeysCapped(l, seqTokens(160), Namespace{}, 14, 0); err != nil || cut != 7 || len(keys) != 14 {
		t.Fatalf("with a trailing pool: %d keys, cut %d, %v; want 3 pages (12 + 2 keys)", len(keys), cut, err)
	}
	if _, _, err = ObjectKeysCapped(layoutOf(1, 40000), seqTokens(10), Namespace{}, 0, 0); !errors.Is(err, ErrPinOverCap) {
		t.Fatalf("one page over the cap: %v, want ErrPinOverCap", err)
	}
	if _, _, err = ObjectKeysCapped(&schemas.ObjectLayout{}, seqTokens(10), Namespace{}, 0, 0); !errors.Is(err, ErrNoLayout) {
		t.Fatalf("no layout: %v", err)
	}
}
