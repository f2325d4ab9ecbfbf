package simulate

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// TestPinKeysMadeOnceForEveryRun: runs asking concurrently for a
// request's pin keys get actions.ObjectKeysCapped's keys, made once;
// a call with other tokens, layout, namespace or caps gets its own keys,
// not the held ones; release drops them.
func TestPinKeysMadeOnceForEveryRun(t *testing.T) {
	layout := cluster.DefaultLayout(4)
	tokens := make([]uint32, 4*50+3)
	for i := range tokens {
		tokens[i] = uint32(i * 7)
	}
	want, wantCut, err := actions.ObjectKeysCapped(layout, tokens, actions.Namespace{}, 30, 0)
	if err != nil || len(want) != 30 || wantCut != 20 {
		t.Fatalf("ObjectKeysCapped: %d keys, cut %d, %v; want 30 and 20", len(want), wantCut, err)
	}
	m := newPinKeys()
	var wg sync.WaitGroup
	const runs = 8
	errs := make([]error, runs)
	for r := range runs {
		wg.Go(func() {
			// Each run's cluster has its own copy of the layout.
			l := cluster.DefaultLayout(4)
			keys, cut, err := m.keys("r1", l, slices.Clone(tokens[:150]), slices.Clone(tokens[150:]), actions.Namespace{}, 30, 0)
			if err != nil || cut != wantCut || !slices.Equal(keys, want) {
				errs[r] = fmt.Errorf("run %d: %d keys, cut %d, %v", r, len(keys), cut, err)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if m.made != 1 || m.size() != 1 {
		t.Fatalf("keys made %d times, %d held; want once, one", m.made, m.size())
	}
	other := slices.Clone(tokens)
	other[5]++
	otherLayout := cluster.DefaultLayout(4)
	otherLayout.HicacheObjectLayout.KeyPrefix = "other"
	for _, c := range []struct {
		name     string
		layout   *schemas.ObjectLayout
		tokens   []uint32
		ns       actions.Namespace
		maxKeys  int
		maxBytes int
		split    int // where the prompt ends and the output begins
	}{
		{"tokens", layout, other, actions.Namespace{}, 30, 0, 150},
		{"fewer tokens", layout, tokens[:100], actions.Namespace{}, 30, 0, 90},
		{"layout", otherLayout, tokens, actions.Namespace{}, 30, 0, 150},
		{"namespace", layout, tokens, actions.Namespace{CacheSalt: "s"}, 30, 0, 150},
		{"keys cap", layout, tokens, actions.Namespace{}, 40, 0, 150},
		{"bytes cap", layout, tokens, actions.Namespace{}, 30, 1000, 150},
	} {
		made := m.made
		keys, cut, err := m.keys("r1", c.layout, c.tokens[:c.split], c.tokens[c.split:], c.ns, c.maxKeys, c.maxBytes)
		wk, wc, werr := actions.ObjectKeysCapped(c.layout, c.tokens, c.ns, c.maxKeys, c.maxBytes)
		if !slices.Equal(keys, wk) || cut != wc || fmt.Sprint(err) != fmt.Sprint(werr) {
			t.Fatalf("%s: %d keys, cut %d, %v; want %d, %d, %v", c.name, len(keys), cut, err, len(wk), wc, werr)
		}
		if slices.Equal(keys, want) || m.made != made+1 {
			t.Fatalf("%s: the held keys answered for other arguments (made %d → %d)", c.name, made, m.made)
		}
	}
	m.release("r1")
	if m.size() != 0 {
		t.Fatalf("%d held after release", m.size())
	}
	// The same tokens split elsewhere between prompt and output are other
	// arguments, with the same keys.
	if keys, _, _ := m.keys("r1", layout, tokens[:10], tokens[10:], actions.Namespace{}, 30, 0); !slices.Equal(keys, want) || m.made != 8 {
		t.Fatalf("after release: %d keys, made %d; want the keys made again", len(keys), m.made)
	}
}

// TestPromptTokensSharedWhileHeld: a run asking for a prompt's tokens
// while another holds them gets the same ones, not a copy; once the
// prompt is released it gets them made again, equal; a prompt's tokens
// are clipped, so appending to them copies.
func TestPromptTokensSharedWhileHeld(t *testing.T) {
	w := tinyTrace(t, rand.New(rand.NewPCG(5, 1)))
	cfg, err := Config{Workload: w, Workers: 2, DeviceBlocks: 2, L3Blocks: 2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	pr, err := newPrompts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(w.Requests, func(r workload.Request) bool { return r.InputLength > 0 })
	a, err := pr.get(i)
	if err != nil {
		t.Fatal(err)
	}
	b, err := pr.get(i)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Tokens) == 0 || &a.Tokens[0] != &b.Tokens[0] || cap(a.Tokens) != len(a.Tokens) {
		t.Fatalf("tokens %d and %d long, shared %v, cap %d: want the same, clipped", len(a.Tokens), len(b.Tokens),
			len(a.Tokens) > 0 && &a.Tokens[0] == &b.Tokens[0], cap(a.Tokens))
	}
	pr.release(i)
	c, err := pr.get(i)
	if err != nil {
		t.Fatal(err)
	}
	if &c.Tokens[0] == &a.Tokens[0] || !slices.Equal(c.Tokens, a.Tokens) || !slices.Equal(c.Tokens, w.PromptTokens(i)) {
		t.Fatal("after release: want the tokens made again, equal")
	}
	runtime.KeepAlive(a)
}
