package routing

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

type staticWorkers []schemas.WorkerRecord

func (s staticWorkers) Workers() []schemas.WorkerRecord { return s }

func u64(v uint64) *uint64 { return &v }

// store makes worker/dp hold the first n blocks of prompt on device.
func store(t *testing.T, ix *kvevents.Index, k kvevents.WorkerKey, prompt []uint32, bs, n int) {
	t.Helper()
	local := kvevents.LocalBlockHashes(prompt, bs)[:n]
	blocks := make([]kvevents.Block, n)
	for i, h := range local {
		blocks[i] = kvevents.Block{ExternalHash: uint64(k.WorkerID)<<40 | uint64(k.DpRank)<<32 | uint64(i+1), LocalHash: h}
	}
	if err := ix.Apply(kvevents.Event{Worker: k, EventID: 1, Kind: schemas.KindStored, Blocks: blocks}); err != nil {
		t.Fatal(err)
	}
}

func TestSelect(t *testing.T) {
	prompt := make([]uint32, 10*16)
	for i := range prompt {
		prompt[i] = uint32(i * 7)
	}
	w := func(id uint64, model string, ranks int) schemas.WorkerRecord {
		eps := make([]string, ranks)
		for i := range eps {
			eps[i] = "tcp://127.0.0.1:" + string(rune('0'+id)) + string(rune('0'+i))
		}
		return schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: eps}
	}
	type held struct {
		k kvevents.WorkerKey
		n int
	}
	cases := []struct {
		name    string
		workers staticWorkers
		held    []held
		loads   []schemas.ActiveLoad
		model   string
		want    kvevents.WorkerKey
		overlap int
	}{
		{"longest overlap wins over load",
			staticWorkers{w(1, "m", 1), w(2, "m", 1), w(3, "m", 1)},
			[]held{{kvevents.WorkerKey{WorkerID: 1}, 2}, {kvevents.WorkerKey{WorkerID: 2}, 7}, {kvevents.WorkerKey{WorkerID: 3}, 4}},
			[]schemas.ActiveLoad{{WorkerID: 2, ActiveDecodeBlocks: u64(1000)}},
			"m", kvevents.WorkerKey{WorkerID: 2}, 7},
		{"equal overlap: lower decode blocks",
			staticWorkers{w(1, "m", 1), w(2, "m", 1)},
			[]held{{kvevents.WorkerKey{WorkerID: 1}, 3}, {kvevents.WorkerKey{WorkerID: 2}, 3}},
			[]schemas.ActiveLoad{{WorkerID: 1, ActiveDecodeBlocks: u64(5)}, {WorkerID: 2, ActiveDecodeBlocks: u64(4)}},
			"m", kvevents.WorkerKey{WorkerID: 2}, 3},
		{"equal decode: lower prefill tokens",
			staticWorkers{w(1, "m", 1), w(2, "m", 1)},
			nil,
			[]schemas.ActiveLoad{{WorkerID: 1, ActivePrefillTokens: u64(10)}, {WorkerID: 2, ActivePrefillTokens: u64(90)}},
			"m", kvevents.WorkerKey{WorkerID: 1}, 0},
		{"all equal: lowest worker id, then dp rank",
			staticWorkers{w(5, "m", 2), w(4, "m", 2)},
			nil, nil, "m", kvevents.WorkerKey{WorkerID: 4, DpRank: 0}, 0},
		{"dp rank with the prefix wins",
			staticWorkers{w(4, "m", 3)},
			[]held{{kvevents.WorkerKey{WorkerID: 4, DpRank: 2}, 5}},
			nil, "m", kvevents.WorkerKey{WorkerID: 4, DpRank: 2}, 5},
		{"other model's worker is never chosen",
			staticWorkers{w(1, "other", 1), w(2, "m", 1)},
			[]held{{kvevents.WorkerKey{WorkerID: 1}, 10}},
			nil, "m", kvevents.WorkerKey{WorkerID: 2}, 0},
		{"request without model: any worker",
			staticWorkers{w(1, "other", 1), w(2, "m", 1)},
			[]held{{kvevents.WorkerKey{WorkerID: 1}, 10}},
			nil, "", kvevents.WorkerKey{WorkerID: 1}, 10},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix := kvevents.NewIndex()
			for _, h := range c.held {
				store(t, ix, h.k, prompt, 16, h.n)
			}
			lt := NewLoadTable()
			for _, l := range c.loads {
				lt.Update(l)
			}
			got, err := NewSelector(c.workers, ix, lt).Select(&schemas.RequestEvent{RequestID: "r", Model: c.model, TokenIDs: prompt})
			if err != nil {
				t.Fatal(err)
			}
			if got.Worker != c.want || got.Overlap != c.overlap {
				t.Fatalf("got %+v overlap %d, want %+v overlap %d", got.Worker, got.Overlap, c.want, c.overlap)
			}
			var wantEP string
			for _, r := range c.workers {
				if r.WorkerID == c.want.WorkerID {
					wantEP = r.HintEndpoints[c.want.DpRank]
				}
			}
			if got.Endpoint != wantEP {
				t.Fatalf("endpoint %s, want the dp rank's %s", got.Endpoint, wantEP)
			}
		})
	}
}

func TestSelectNoWorker(t *testing.T) {
	s := NewSelector(staticWorkers{{WorkerID: 1, Model: "a", KvBlockSize: 16, HintEndpoints: []string{"tcp://x:1"}}},
		kvevents.NewIndex(), NewLoadTable())
	if _, err := s.Select(&schemas.RequestEvent{RequestID: "r", Model: "b"}); !errors.Is(err, ErrNoWorker) {
		t.Fatalf("err = %v, want ErrNoWorker", err)
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
