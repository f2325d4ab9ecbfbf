package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/schemas"
)

// discardSender takes every hint, releases its body and settles it as
// sent, as the pool does for a hint sent inline.
type discardSender struct{ n int }

func (d *discardSender) Send(_ string, h actions.Hint) error {
	d.n++
	if h.Release != nil {
		h.Release(h.Body)
	}
	if h.Done != nil {
		h.Done(true)
	}
	return nil
}

// BenchmarkWakeup is one JSON wake-up through Engine.Request, decode to
// the hint handed to the sender, on the load test's shape: 8 workers of
// block size 16, 64 sessions of 2,048 tokens, each worker holding the
// first half of its sessions' prompts.
func BenchmarkWakeup(b *testing.B) {
	const nw, sessions, tokens, bs = 8, 64, 2048, 16
	ix := index.New()
	var reg workers
	for w := range uint64(nw) {
		reg = append(reg, schemas.WorkerRecord{WorkerID: w + 1, Model: "m", KvBlockSize: bs,
			HintEndpoints: []string{fmt.Sprintf("tcp://127.0.0.1:%d", 9000+w)}})
	}
	msgs := make([]Message, sessions)
	for s := range msgs {
		p := make([]uint32, tokens)
		for i := range p {
			p[i] = uint32(s*tokens + i)
		}
		local := kvevents.LocalBlockHashes(p, bs)[:tokens/bs/2]
		blocks := make([]kvevents.Block, len(local))
		for i, h := range local {
			blocks[i] = kvevents.Block{ExternalHash: uint64(s)<<32 | uint64(i+1), LocalHash: h}
		}
		if err := ix.Apply(kvevents.Event{Worker: kvevents.WorkerKey{WorkerID: uint64(s%nw) + 1}, EventID: uint64(s/nw + 1),
			Kind: schemas.KindStored, Blocks: blocks}); err != nil {
			b.Fatal(err)
		}
		body, err := json.Marshal(map[string]any{"request_id": fmt.Sprintf("wake-%d", s), "session_id": fmt.Sprintf("s%d", s),
			"model": "m", "token_ids": p, "headers": map[string]string{schemas.HeaderWakeup: "1"}})
		if err != nil {
			b.Fatal(err)
		}
		msgs[s] = Message{Subject: "llm.requests.m", Data: body}
	}
	snd := &discardSender{}
	e, err := NewEngine(Decisions{NoPinRenewal: true}, EngineDeps{Index: ix, Workers: reg, Sender: snd})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if o := e.Request(ctx, Delivery{Seq: uint64(i + 1), Time: time.Now(), Delivered: 1}, msgs[i%len(msgs)]); o.Verdict != Held {
			b.Fatalf("wake-up %d: %+v", i, o)
		}
		i++
	}
	if snd.n != i {
		b.Fatalf("%d hints for %d wake-ups", snd.n, i)
	}
}
