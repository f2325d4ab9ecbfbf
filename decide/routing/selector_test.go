package routing

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

type staticWorkers []schemas.WorkerRecord

func (s staticWorkers) Workers() []schemas.WorkerRecord { return s }

func u64(v uint64) *uint64 { return &v }

func key(id uint64, rank uint32) kvevents.WorkerKey {
	return kvevents.WorkerKey{WorkerID: id, DpRank: rank}
}

// worker makes a record with one endpoint per dp rank.
func worker(id uint64, model string, bs uint32, ranks int) schemas.WorkerRecord {
	eps := make([]string, ranks)
	for i := range eps {
		eps[i] = fmt.Sprintf("tcp://127.0.0.1:%d%d", id, i)
	}
	return schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: bs, HintEndpoints: eps}
}

func prompt(n int) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(i * 7)
	}
	return p
}

// store makes worker/dp hold the first n blocks (of size bs) of p on device.
func store(t testing.TB, ix *index.Memory, k kvevents.WorkerKey, p []uint32, bs, n int) {
	t.Helper()
	local := kvevents.LocalBlockHashes(p, bs)[:n]
	blocks := make([]kvevents.Block, n)
	for i, h := range local {
		blocks[i] = kvevents.Block{ExternalHash: k.WorkerID<<40 | uint64(k.DpRank)<<32 | uint64(i+1), LocalHash: h}
	}
	if err := ix.Apply(kvevents.Event{Worker: k, EventID: 1, Kind: schemas.KindStored, Blocks: blocks}); err != nil {
		t.Fatal(err)
	}
}

type held struct {
	k  kvevents.WorkerKey
	bs int
	n  int
}

// TestSelect checks the logit of every candidate and the choice against
// values worked out by hand from the formula in the package doc. Unless a
// case says otherwise: prompt of 160 tokens, block size 16, so every
// candidate's decode term includes the prompt's floor(160/16)=10 blocks.
func TestSelect(t *testing.T) {
	const m = "m"
	w16 := func(id uint64, ranks int) schemas.WorkerRecord { return worker(id, m, 16, ranks) }
	cases := []struct {
		name    string
		tokens  int // prompt length; 0 = 160
		weight  float64
		workers staticWorkers
		held    []held
		loads   []schemas.ActiveLoad
		model   string
		logits  map[kvevents.WorkerKey]float64
		want    kvevents.WorkerKey
	}{
		{name: "weight 1: four more cached blocks beat three blocks of load", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 6}, {key(2, 0), 16, 2}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(3)}},
			// w1: prefill=(160-6*16)/16=4, decode=3+10=13 → 1*4+13=17
			// w2: prefill=(160-2*16)/16=8, decode=0+10=10 → 1*8+10=18
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 17, key(2, 0): 18}, want: key(1, 0)},
		{name: "weight 0: load alone decides", weight: 0,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 6}, {key(2, 0), 16, 2}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(3)}},
			// w1: 0*4 + (3+10) = 13;  w2: 0*8 + (0+10) = 10
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 13, key(2, 0): 10}, want: key(2, 0)},
		{name: "weight 1: six blocks of load outweigh four cached blocks", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 6}, {key(2, 0), 16, 2}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(6)}},
			// w1: 1*4 + (6+10) = 20;  w2: 1*8 + 10 = 18
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 20, key(2, 0): 18}, want: key(2, 0)},
		{name: "weight 2: same state, now the cache wins", weight: 2,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 6}, {key(2, 0), 16, 2}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(6)}},
			// w1: 2*4 + 16 = 24;  w2: 2*8 + 10 = 26
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 24, key(2, 0): 26}, want: key(1, 0)},
		{name: "load decides against a long overlap", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 9}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(50)}},
			// w1: prefill=(160-144)/16=1, decode=50+10=60 → 61
			// w2: prefill=160/16=10, decode=10 → 20
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 61, key(2, 0): 20}, want: key(2, 0)},
		{name: "active prefill tokens add to the prefill term", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 4}, {key(2, 0), 16, 4}},
			loads:   []schemas.ActiveLoad{{WorkerID: 1, ActivePrefillTokens: u64(64)}},
			// w1: prefill=(160-64+64)/16=10, decode=10 → 20
			// w2: prefill=(160-64)/16=6, decode=10 → 16
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 20, key(2, 0): 16}, want: key(2, 0)},
		{name: "equal logits: the longer overlap wins over the lower id", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 2}, {key(2, 0), 16, 6}},
			loads:   []schemas.ActiveLoad{{WorkerID: 2, ActiveDecodeBlocks: u64(4)}},
			// w1: 8 + (0+10) = 18;  w2: 4 + (4+10) = 18 → tie; overlap 6 > 2
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 18, key(2, 0): 18}, want: key(2, 0)},
		{name: "equal logits and overlap: lowest worker id, then dp rank", weight: 1,
			workers: staticWorkers{w16(5, 2), w16(4, 2)},
			// nothing cached, no load: every rank 10 + 10 = 20
			logits: map[kvevents.WorkerKey]float64{key(5, 0): 20, key(5, 1): 20, key(4, 0): 20, key(4, 1): 20},
			want:   key(4, 0)},
		{name: "the dp rank holding the prefix wins", weight: 1,
			workers: staticWorkers{w16(4, 3)},
			held:    []held{{key(4, 2), 16, 5}},
			// rank 2: (160-80)/16=5 + 10 = 15; ranks 0 and 1: 10 + 10 = 20
			logits: map[kvevents.WorkerKey]float64{key(4, 0): 20, key(4, 1): 20, key(4, 2): 15}, want: key(4, 2)},
		{name: "each dp rank has its own load", weight: 1,
			workers: staticWorkers{w16(4, 2)},
			held:    []held{{key(4, 0), 16, 5}, {key(4, 1), 16, 5}},
			loads:   []schemas.ActiveLoad{{WorkerID: 4, DpRank: 0, ActiveDecodeBlocks: u64(3)}},
			// rank 0: 5 + (3+10) = 18; rank 1: 5 + 10 = 15
			logits: map[kvevents.WorkerKey]float64{key(4, 0): 18, key(4, 1): 15}, want: key(4, 1)},
		{name: "a worker of block size 32 counts in its own blocks", weight: 1,
			workers: staticWorkers{w16(1, 1), worker(2, m, 32, 1)},
			held:    []held{{key(1, 0), 16, 8}, {key(2, 0), 32, 4}},
			// both hold 128 tokens
			// w1 (16): prefill=(160-128)/16=2, decode=floor(160/16)=10 → 12
			// w2 (32): prefill=(160-128)/32=1, decode=floor(160/32)=5  → 6
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 12, key(2, 0): 6}, want: key(2, 0)},
		{name: "no load report counts as idle", weight: 1,
			workers: staticWorkers{w16(1, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 5}, {key(2, 0), 16, 5}},
			loads:   []schemas.ActiveLoad{{WorkerID: 2, ActiveDecodeBlocks: u64(1)}},
			// w1 (never reported): (160-80)/16=5 + (0+10) = 15
			// w2: 5 + (1+10) = 16
			// (Dynamo's untracked-worker fallback would give w1 160/16=10 + 10 = 20.)
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 15, key(2, 0): 16}, want: key(1, 0)},
		{name: "partial trailing block: the e2e state", weight: 1, tokens: 133,
			workers: staticWorkers{w16(1, 1), w16(2, 1), w16(3, 1)},
			held:    []held{{key(1, 0), 16, 2}, {key(2, 0), 16, 6}, {key(3, 0), 16, 4}},
			loads:   []schemas.ActiveLoad{{WorkerID: 2, ActiveDecodeBlocks: u64(90)}},
			// 133 tokens: floor(133/16) = 8 full blocks
			// w1: (133-32)/16 = 6.3125, decode 0+8  → 14.3125
			// w2: (133-96)/16 = 2.3125, decode 90+8 → 100.3125
			// w3: (133-64)/16 = 4.3125, decode 0+8  → 12.3125
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 14.3125, key(2, 0): 100.3125, key(3, 0): 12.3125},
			want:   key(3, 0)},
		{name: "another model's worker is never a candidate", weight: 1,
			workers: staticWorkers{worker(1, "other", 16, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 10}},
			// w2: 10 + 10 = 20
			logits: map[kvevents.WorkerKey]float64{key(2, 0): 20}, want: key(2, 0)},
		{name: "a request without model: every worker", weight: 1, model: "-",
			workers: staticWorkers{worker(1, "other", 16, 1), w16(2, 1)},
			held:    []held{{key(1, 0), 16, 10}},
			// w1: 0 + 10 = 10; w2: 10 + 10 = 20
			logits: map[kvevents.WorkerKey]float64{key(1, 0): 10, key(2, 0): 20}, want: key(1, 0)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := c.tokens
			if n == 0 {
				n = 160
			}
			p := prompt(n)
			ix := index.New()
			for _, h := range c.held {
				store(t, ix, h.k, p, h.bs, h.n)
			}
			lt := NewLoadTable()
			for _, l := range c.loads {
				lt.Update(l)
			}
			model := m
			if c.model == "-" {
				model = ""
			}
			req := &schemas.RequestEvent{RequestID: "r", Model: model, TokenIDs: p}
			// The classic cost, whose formula these cases were worked out
			// from (cost_test.go has the default cost's).
			s := mustSelector(NewSelector(c.workers, ix, lt, tuned(func(cfg *Config) { cfg.Cost, cfg.OverlapScoreWeight = CostClassic, c.weight })))

			cands := s.Candidates(req)
			if len(cands) != len(c.logits) {
				t.Fatalf("%d candidates, want %d: %+v", len(cands), len(c.logits), cands)
			}
			for _, cd := range cands {
				want, ok := c.logits[cd.Worker]
				if !ok || cd.Logit != want {
					t.Errorf("%+v: logit %v (prefill %v, decode %v), want %v", cd.Worker, cd.Logit, cd.PrefillBlocks, cd.DecodeBlocks, want)
				}
			}
			got, err := s.Select(req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Worker != c.want || got.Logit != c.logits[c.want] {
				t.Fatalf("chose %+v (logit %v), want %+v (logit %v)", got.Worker, got.Logit, c.want, c.logits[c.want])
			}
			for _, r := range c.workers {
				if r.WorkerID == c.want.WorkerID && got.Endpoint != r.HintEndpoints[c.want.DpRank] {
					t.Fatalf("endpoint %s, want the dp rank's %s", got.Endpoint, r.HintEndpoints[c.want.DpRank])
				}
			}
		})
	}
}

func TestSelectNoWorker(t *testing.T) {
	for name, w := range map[string]staticWorkers{
		"other model":   {worker(1, "a", 16, 1)},
		"no block size": {worker(1, "b", 0, 1)},
		"no workers":    nil,
	} {
		s := mustSelector(NewSelector(w, index.New(), NewLoadTable()))
		if _, err := s.Select(&schemas.RequestEvent{RequestID: "r", Model: "b", TokenIDs: prompt(32)}); !errors.Is(err, ErrNoWorker) {
			t.Errorf("%s: err = %v, want ErrNoWorker", name, err)
		}
	}
}

func TestSelectEmptyPrompt(t *testing.T) {
	lt := NewLoadTable()
	lt.Update(schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: u64(2)})
	s := mustSelector(NewSelector(staticWorkers{worker(1, "m", 16, 1), worker(2, "m", 16, 1)}, index.New(), lt))
	// No tokens: prefill 0, decode = load only; w1 2, w2 0.
	got, err := s.Select(&schemas.RequestEvent{RequestID: "r", Model: "m"})
	if err != nil || got.Worker != key(2, 0) || got.Logit != 0 {
		t.Fatalf("got %+v, %v; want worker 2 with logit 0", got, err)
	}
}

func TestLoadTableMergesHalves(t *testing.T) {
	lt := NewLoadTable()
	lt.Update(schemas.ActiveLoad{WorkerID: 1, KvUsedBlocks: u64(7)})
	lt.Update(schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: u64(3)})
	l := lt.Get(kvevents.WorkerKey{WorkerID: 1})
	if l.UsedBlocks() != 7 || l.DecodeBlocks() != 3 {
		t.Fatalf("merged load %+v", l)
	}
	lt.RemoveWorker(1)
	if lt.Len() != 0 {
		t.Fatal("RemoveWorker left entries")
	}
}

// TestLoadTableBounded: a flood of reports from made-up workers stops at
// MaxLoadEntries, while known workers keep updating.
func TestLoadTableBounded(t *testing.T) {
	lt := NewLoadTable()
	for i := range MaxLoadEntries {
		if err := lt.Update(schemas.ActiveLoad{WorkerID: uint64(i + 1), ActiveDecodeBlocks: u64(1)}); err != nil {
			t.Fatalf("report %d: %v", i, err)
		}
	}
	if err := lt.Update(schemas.ActiveLoad{WorkerID: MaxLoadEntries + 1}); !errors.Is(err, ErrLoadTableFull) {
		t.Fatalf("new worker past the bound: err %v, want ErrLoadTableFull", err)
	}
	if err := lt.Update(schemas.ActiveLoad{WorkerID: 1, ActiveDecodeBlocks: u64(9)}); err != nil {
		t.Fatalf("known worker refused: %v", err)
	}
	if got := lt.Get(kvevents.WorkerKey{WorkerID: 1}).ActiveDecodeBlocks; got == nil || *got != 9 {
		t.Fatalf("worker 1 load %v, want 9", got)
	}
	lt.RemoveWorker(2)
	if err := lt.Update(schemas.ActiveLoad{WorkerID: MaxLoadEntries + 1}); err != nil {
		t.Fatalf("room freed by a departure not reused: %v", err)
	}
	if lt.Len() != MaxLoadEntries {
		t.Fatalf("len %d, want %d", lt.Len(), MaxLoadEntries)
	}
}
