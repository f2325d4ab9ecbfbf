package evictstudy

import (
	"github.com/hintstream/hintstream/internal/race"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"
	"github.com/hintstream/hintstream/whatif/cluster"
	"github.com/hintstream/hintstream/whatif/workload"
)

// randomWorkload returns n requests whose prompts continue, fork or cut
// short earlier ones and add fresh blocks, over ids below ids (so a
// fresh block id can recur under another prefix), one second apart.
func randomWorkload(rng *rand.Rand, n, ids, maxBlocks int) *workload.Workload {
	const bs = 4
	w := &workload.Workload{BlockSize: bs}
	for i := range n {
		var h []uint64
		session := "s-" + strconv.Itoa(i)
		if i > 0 && rng.IntN(4) > 0 {
			// A continuation is the earlier request's next turn (if it has
			// none yet) or a fork, in its conversation.
			j := rng.IntN(i)
			prev := &w.Requests[j]
			h = append(h, prev.HashIDs[:rng.IntN(len(prev.HashIDs)+1)]...)
			session = prev.Session
			if prev.Next < 0 {
				prev.Next = i
			}
		}
		for range 1 + rng.IntN(maxBlocks) {
			h = append(h, uint64(rng.IntN(ids)))
		}
		h = h[:min(len(h), maxBlocks)]
		// Sometimes the last block is partial: it is no page.
		length := len(h)*bs - rng.IntN(2)*(bs-1)
		w.Requests = append(w.Requests, workload.Request{Index: i, At: time.Duration(i) * time.Second, InputLength: length,
			HashIDs: h, Prev: -1, Next: -1, Session: session})
	}
	return w
}

func mustAccesses(t *testing.T, w *workload.Workload) *Accesses {
	t.Helper()
	a, err := FromWorkload(w)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The study's LRU is the harness's store: cluster.L3Store, looked up as
// cluster.Cluster.Serve looks it up (the resident run from the first page,
// touched) and written through with Put, hits the same pages request by
// request.
func TestLRUMatchesSimL3Store(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		a := mustAccesses(t, randomWorkload(rng, 40, 6, 8))
		capacity := 1 + rng.IntN(12)
		lru := NewLRU(a, capacity)
		store := cluster.NewL3Store(capacity)
		for i, acc := range a.List {
			keys := make([]string, len(acc.Keys))
			for j, k := range acc.Keys {
				keys[j] = strconv.Itoa(int(k))
			}
			want := store.Run(keys, 0)
			store.Touch(keys[:want])
			store.Put(keys, acc.At)
			got := 0
			for _, k := range acc.Keys {
				if !lru.Contains(k) {
					break
				}
				got++
			}
			lru.Write(acc.At, acc.Keys)
			if got != want {
				t.Fatalf("trial %d, request %d (capacity %d): LRU hits %d pages, cluster.L3Store %d", trial, i, capacity, got, want)
			}
			for _, k := range acc.Keys {
				if lru.Contains(k) != store.Contains(strconv.Itoa(int(k))) {
					t.Fatalf("trial %d, request %d: page %d resident in one store only", trial, i, k)
				}
			}
		}
		if lru.Len() != store.Len() {
			t.Fatalf("trial %d: LRU holds %d pages, cluster.L3Store %d", trial, lru.Len(), store.Len())
		}
	}
}

// optimum is the most prefix hits any store of capacity pages can have on
// a, by exhaustive search over the sets it may hold after each request
// (a subset of what it held and the prompt's pages).
func optimum(a *Accesses, capacity int) int64 {
	if a.Keys > 16 {
		panic("optimum: too many pages")
	}
	best := map[uint32]int64{0: 0}
	for _, acc := range a.List {
		var prompt uint32
		for _, k := range acc.Keys {
			prompt |= 1 << k
		}
		next := map[uint32]int64{}
		for held, hits := range best {
			n := int64(0)
			for _, k := range acc.Keys {
				if held&(1<<k) == 0 {
					break
				}
				n++
			}
			pool := held | prompt
			for sub := pool; ; sub = (sub - 1) & pool {
				if bits.OnesCount32(sub) <= capacity {
					if v, ok := next[sub]; !ok || hits+n > v {
						next[sub] = hits + n
					}
				}
				if sub == 0 {
					break
				}
			}
		}
		best = next
	}
	var m int64
	for _, v := range best {
		m = max(m, v)
	}
	return m
}

// Belady is the optimum, found exhaustively on small workloads, so it
// bounds every policy, admission filters included.
func TestBeladyIsTheOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	checked := 0
	for checked < 150 {
		a := mustAccesses(t, randomWorkload(rng, 8, 3, 4))
		if a.Keys > 12 {
			continue
		}
		checked++
		for capacity := 1; capacity <= 4; capacity++ {
			want := optimum(a, capacity)
			if got := Replay(a, NewBelady(a, capacity), "Belady").HitPages; got != want {
				t.Fatalf("capacity %d, %d pages: Belady hits %d pages, the optimum %d", capacity, a.Keys, got, want)
			}
		}
	}
}

// No policy beats Belady, hits fewer than none, or holds more than its
// capacity.
func TestNoPolicyBeatsBelady(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 100 {
		a := mustAccesses(t, randomWorkload(rng, 120, 20, 10))
		for _, capacity := range []int{1, 2, 5, 13, 40} {
			res, err := Run(a, capacity, Makers())
			if err != nil {
				t.Fatal(err)
			}
			checkBounded(t, "trial "+strconv.Itoa(trial), capacity, res)
		}
	}
}

func checkBounded(t *testing.T, what string, capacity int, res []Result) {
	t.Helper()
	var bel int64 = -1
	for _, r := range res {
		if r.Name == NameBelady {
			bel = r.HitPages
		}
	}
	if bel < 0 {
		t.Fatal("no Belady result")
	}
	for _, r := range res {
		if r.HitPages < 0 || r.HitPages > bel {
			t.Errorf("%s, capacity %d: %s hits %d pages, Belady %d", what, capacity, r.Name, r.HitPages, bel)
		}
		if r.MaxLen > capacity {
			t.Errorf("%s: %s held %d pages, capacity %d", what, r.Name, r.MaxLen, capacity)
		}
	}
}

func TestRunRejectsAZeroCapacity(t *testing.T) {
	a := mustAccesses(t, randomWorkload(rand.New(rand.NewPCG(7, 8)), 3, 3, 3))
	if _, err := Run(a, 0, Makers()); err == nil {
		t.Fatal("capacity 0 accepted")
	}
	if _, err := FromWorkload(&workload.Workload{}); err == nil {
		t.Fatal("block size 0 accepted")
	}
}

// On both workloads the harness plays, at every capacity studied, the
// policies stay within Belady and at least none, Belady within an
// unbounded store, and the study's LRU hits what cluster.L3Store does.
func TestStudyOnTheHarnessWorkloads(t *testing.T) {
	trace, err := workload.LoadTrace(testvectors.TracePath(t), workload.TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	syn, err := workload.Generate(workload.SyntheticConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range map[string]*workload.Workload{"trace": trace, "synthetic sessions": syn} {
		a := mustAccesses(t, w)
		caps, at := []int{DefaultCapacity / 4, DefaultCapacity, 4 * DefaultCapacity}, 1
		if race.Enabled { // all three run without -race (make test's sim pass)
			caps, at = caps[1:2], 0
		}
		st, err := RunStudy(name, a, caps, Makers())
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range st.Columns {
			checkBounded(t, name, c.Capacity, c.Results)
			if bel := st.Get(i, NameBelady); bel > st.ReusableTokens {
				t.Errorf("%s: Belady hits %d tokens, more than an unbounded store's %d", name, bel, st.ReusableTokens)
			}
		}
		store := cluster.NewL3Store(DefaultCapacity)
		var hits int64
		for _, acc := range a.List {
			keys := make([]string, len(acc.Keys))
			for j, k := range acc.Keys {
				keys[j] = strconv.Itoa(int(k))
			}
			n := store.Run(keys, 0)
			store.Touch(keys[:n])
			store.Put(keys, acc.At)
			hits += int64(n)
		}
		if got := st.Get(at, NameLRU); got != hits*int64(a.BlockSize) {
			t.Errorf("%s: the study's LRU hits %d tokens, cluster.L3Store %d", name, got, hits*int64(a.BlockSize))
		}
		t.Logf("\n%s", st.Markdown())
	}
}

// Belady's extra hits over LRU, counted by earlier uses and by reuser,
// add up to the difference of their hits; every later use has one
// reuser.
func TestProfileAddsUp(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20 {
		a := mustAccesses(t, randomWorkload(rng, 150, 20, 10))
		capacity := 1 + rng.IntN(30)
		pr := NewProfile(a, capacity, 3)
		lru := Replay(a, NewLRU(a, capacity), "").HitPages
		bel := Replay(a, NewBelady(a, capacity), "").HitPages
		var diff, reused, byReuser, lruHits, belHits int64
		for _, r := range pr.Rows {
			diff += r.BeladyOnly - r.LRUOnly
			reused += r.Reused
		}
		for _, r := range pr.ByReuser {
			byReuser += r.Reuses
			lruHits += r.LRUHits
			belHits += r.BeladyHits
		}
		if diff != bel-lru || lruHits != lru || belHits != bel || byReuser != reused {
			t.Fatalf("capacity %d: Belady-only − LRU-only %d, Belady − LRU %d; hits by reuser %d/%d, replays %d/%d; reuses %d by reuser, %d by use",
				capacity, diff, bel-lru, lruHits, belHits, lru, bel, byReuser, reused)
		}
	}
}

// A pin held for an announced next turn keeps its pages through traffic
// that LRU would evict them for; online session pins, which cannot tell
// which prompts have a next turn, spend the budget on those that do not.
func TestNextTurnPinsKeepAPromptForItsTurn(t *testing.T) {
	req := func(i int, at time.Duration, session string, next int, ids ...uint64) workload.Request {
		return workload.Request{Index: i, At: at * time.Second, InputLength: len(ids), HashIDs: ids, Session: session, Prev: -1, Next: next}
	}
	// Conversation x has turns at 0, 10, 20 and 30 s; between them other
	// conversations write four or five pages.
	w := &workload.Workload{BlockSize: 1, Requests: []workload.Request{
		req(0, 0, "x", 4, 1),
		req(1, 1, "y", -1, 2),
		req(2, 2, "z", -1, 3),
		req(3, 3, "u", -1, 10, 11, 12),
		req(4, 10, "x", 8, 1, 4),
		req(5, 11, "a", -1, 20, 21),
		req(6, 12, "b", -1, 22, 23),
		req(7, 13, "c", -1, 24),
		req(8, 20, "x", 12, 1, 4, 5, 6),
		req(9, 21, "d", -1, 30, 31),
		req(10, 22, "e", -1, 32, 33),
		req(11, 23, "f", -1, 34),
		req(12, 30, "x", -1, 1, 4, 5, 6, 9),
	}}
	a := mustAccesses(t, w)
	hits := func(m func(*Accesses, int) Policy) int64 { return Replay(a, m(a, 4), "").HitPages }
	if got := hits(NewLRU); got != 0 {
		t.Fatalf("LRU of 4 pages hit %d: the test needs it to lose every turn", got)
	}
	// Two pages may be pinned: x's first page for its 10 s turn (1 hit),
	// its two pages for the 20 s turn (2), and two of its four for the
	// 30 s turn (2).
	if got := hits(NewNextTurnPins(0.5)); got != 1+2+2 {
		t.Fatalf("oracle next-turn pins hit %d pages, want 5", got)
	}
	// Online, y's page takes the second pin for a minute, so only x's
	// first page stays for each of its turns.
	if got := hits(NewSessionPins(0.5)); got != 1+1+1 {
		t.Fatalf("session pins hit %d pages, want 3", got)
	}
	if got := hits(NewSessionPins(0)); got != 0 {
		t.Fatalf("session pins without a budget hit %d pages, LRU 0", got)
	}
}

// The policies built to resist scans do: a hot set of a third of the
// store, used three times in a row each round, survives the scan of as
// many unique pages as the store holds that ends the round under each of
// them, while LRU loses it to every scan. (So their losses on the
// traces come from the traffic, not from a policy that fails at what it
// was made for.)
func TestScanResistantPoliciesKeepAHotSet(t *testing.T) {
	const capacity, rounds, hotSet = 30, 100, 10
	w := &workload.Workload{BlockSize: 1}
	next := uint64(1000)
	at := time.Duration(0)
	add := func(id uint64) {
		w.Requests = append(w.Requests, workload.Request{Index: len(w.Requests), At: at, InputLength: 1,
			HashIDs: []uint64{id}, Prev: -1, Next: -1})
		at += time.Second / 4
	}
	for range rounds {
		for range 3 {
			for h := range uint64(hotSet) {
				add(h)
			}
		}
		for range capacity {
			add(next)
			next++
		}
	}
	a := mustAccesses(t, w)
	// LRU hits the second and third passes only.
	if got, want := Replay(a, NewLRU(a, capacity), "").HitPages, int64(rounds*2*hotSet); got != want {
		t.Fatalf("LRU hit %d pages, want %d", got, want)
	}
	for _, m := range []Maker{{"ARC", NewARC}, {"2Q", NewTwoQ}, {"SLRU", NewSLRU}, {"S3-FIFO", NewS3FIFO(DefaultS3Threshold)},
		{"LFU", NewLFUDecay(time.Minute)}, {"TinyLFU", NewTinyLFU}, {"W-TinyLFU", NewWTinyLFU}, {"LHD", NewLHD}} {
		// At least half the rounds' first passes hit too (LHD learns for
		// its first thousand accesses, and samples).
		if got, want := Replay(a, m.New(a, capacity), m.Name).HitPages, int64(rounds*2*hotSet+rounds*hotSet/2); got < want {
			t.Errorf("%s hit %d pages, want at least %d", m.Name, got, want)
		}
	}
}
