package cluster

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// indexSink feeds every KV event, through its JSON wire form, to a real
// hintstream index, so tests can compare the index with the caches.
type indexSink struct {
	t     *testing.T
	ix    *index.Memory
	loads []schemas.ActiveLoad
}

func (s *indexSink) KVEvent(ev *schemas.RouterEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	dec, err := schemas.Limits{}.DecodeRouterEvent(b)
	if err != nil {
		s.t.Fatalf("hintstream rejects the simulator's event %s: %v", b, err)
	}
	return s.ix.Apply(kvevents.FromRouterEvent(dec))
}

func (s *indexSink) Load(l *schemas.ActiveLoad) error { s.loads = append(s.loads, *l); return nil }

func tokensOf(first uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = first + uint32(i)
	}
	return out
}

func TestClusterServeClassifiesPromptTokens(t *testing.T) {
	sink := &indexSink{t: t, ix: index.New()}
	c, err := NewCluster(Config{Workers: 2, DeviceBlocks: 4, L3Blocks: 100, BlockSize: 4, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	long, err := c.Prompt(tokensOf(0, 18)) // 4 full blocks and 2 tokens
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.Serve(0, long, 18, time.Second, 3*time.Second)
	if err != nil || out != (Outcome{RecomputedTokens: 18}) {
		t.Fatalf("cold: %+v %v", out, err)
	}
	// Same prompt on the same worker: every full block is a device hit.
	if out, _ = c.Serve(0, long, 18, 0, 0); out != (Outcome{DeviceTokens: 16, RecomputedTokens: 2}) {
		t.Fatalf("warm: %+v", out)
	}
	// On the other worker the pages come from L3.
	if out, _ = c.Serve(1, long, 18, 0, 0); out != (Outcome{L3Tokens: 16, RecomputedTokens: 2}) {
		t.Fatalf("L3: %+v", out)
	}
	// While the first request runs (until 3 s) its blocks stay on
	// worker 0: another prompt finds no room and stores nothing.
	other, _ := c.Prompt(tokensOf(1000, 16))
	c.Serve(0, other, 16, 0, 0)
	if got, n := c.Workers[0].Cache.Prefix(long.Seq), c.Workers[0].Cache.Unstored(); got != 4 || n != 4 {
		t.Fatalf("a running request's blocks: %d of 4 kept, %d blocks unstored (want 4, 4)", got, n)
	}
	// Once it has ended, worker 0 is pushed out by the other prompt; a
	// prefetch brings the first prompt back from L3.
	c.Advance(3 * time.Second)
	c.Serve(0, other, 16, 0, 0)
	if c.Workers[0].Cache.Prefix(long.Seq) != 0 {
		t.Fatal("the other prompt should have evicted the first")
	}
	if n, err := c.Prefetch(0, long); err != nil || n != 4 {
		t.Fatalf("prefetch loaded %d blocks (%v), want 4", n, err)
	}
	if out, _ = c.Serve(0, long, 18, 0, 0); out.DeviceTokens != 16 {
		t.Fatalf("after prefetch: %+v", out)
	}
	// hintstream's index, built from the published events alone, agrees
	// with the caches.
	for _, p := range []*Prompt{long, other} {
		got := sink.ix.Overlap(p.Seq)
		exact := c.Router.Overlap(p.Seq)
		if len(got) != len(exact) {
			t.Fatalf("index %v, caches %v", got, exact)
		}
		for k, v := range exact {
			if got[k] != v {
				t.Fatalf("index %v, caches %v", got, exact)
			}
		}
	}
}

func TestClusterLoadFollowsTheClock(t *testing.T) {
	sink := &indexSink{t: t, ix: index.New()}
	c, err := NewCluster(Config{Workers: 1, BlockSize: 4, Sink: sink})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Prompt(tokensOf(0, 10))
	c.Serve(0, p, 10, time.Second, 5*time.Second) // 3 blocks, 10 new tokens
	l := c.Load(0)
	if l.PrefillTokens() != 10 || l.DecodeBlocks() != 3 || l.UsedBlocks() != 2 {
		t.Fatalf("at 0: %+v %d %d", l, l.PrefillTokens(), l.DecodeBlocks())
	}
	c.Advance(2 * time.Second)
	if l = c.Load(0); l.PrefillTokens() != 0 || l.DecodeBlocks() != 3 {
		t.Fatal("after the prefill only the decode load remains")
	}
	if err := c.PublishLoads(); err != nil || len(sink.loads) != 1 {
		t.Fatalf("published %d", len(sink.loads))
	}
	c.PublishLoads()
	if len(sink.loads) != 1 {
		t.Fatal("an unchanged load is not sent again")
	}
	c.Advance(5 * time.Second)
	if l = c.Load(0); l.DecodeBlocks() != 0 {
		t.Fatal("a finished request leaves no load")
	}
	c.Advance(time.Second) // never backwards
	if c.Now() != 5*time.Second {
		t.Fatalf("now %v", c.Now())
	}
}

func TestClusterRejectsLayoutsWithSeveralObjectsPerPage(t *testing.T) {
	l := DefaultLayout(4)
	l.HicacheObjectLayout.Pools[0].Suffixes = []string{"_k", "_v"}
	c, err := NewCluster(Config{BlockSize: 4, Layout: l})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Prompt(tokensOf(0, 8)); err == nil {
		t.Fatal("two objects per page must be refused")
	}
	if _, err := NewCluster(Config{Workers: 2, Endpoints: []string{"tcp://127.0.0.1:1"}}); err == nil {
		t.Fatal("endpoints must match the workers")
	}
}
