package speed

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// makePrompts returns n distinct prompts of tokens tokens, drawn from a
// Qwen-sized vocabulary (151,936) so their encoded size is a real one.
func makePrompts(n, tokens int) [][]uint32 {
	r := rand.New(rand.NewPCG(7, 11))
	out := make([][]uint32, n)
	for s := range out {
		p := make([]uint32, tokens)
		for k := range p {
			p[k] = uint32(r.IntN(151936))
		}
		out[s] = p
	}
	return out
}

// registerWorkers makes the registry hold exactly one worker per
// endpoint (ids 1..n, model loadModel, block size 16), and publishes KV
// events in which worker s%n+1 stores the first half of prompt s, so the
// worker choice has real overlaps to weigh.
func registerWorkers(ctx context.Context, js jetstream.JetStream, endpoints []string, prompts [][]uint32) error {
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		return err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return err
	}
	for k := range keys.Keys() {
		if id, err := strconv.ParseUint(k, 10, 64); err != nil || id == 0 || id > uint64(len(endpoints)) {
			if err := kv.Delete(ctx, k); err != nil {
				return err
			}
		}
	}
	for i, ep := range endpoints {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: uint64(i + 1), Model: loadModel,
			KvBlockSize: 16, HintEndpoints: []string{ep}}); err != nil {
			return err
		}
	}
	eventIDs := make([]uint64, len(endpoints))
	for s, p := range prompts {
		w := s % len(endpoints)
		local := kvevents.LocalBlockHashes(p[:len(p)/2], 16)
		if len(local) == 0 {
			continue
		}
		seq := kvevents.SequenceHashes(local)
		blocks := make([]schemas.StoredBlock, len(local))
		for i := range local {
			blocks[i] = schemas.StoredBlock{BlockHash: schemas.BlockHash(seq[i]), TokensHash: schemas.BlockHash(local[i])}
		}
		eventIDs[w]++
		body, err := json.Marshal(schemas.RouterEvent{WorkerID: uint64(w + 1), Event: schemas.KvCacheEvent{
			EventID: eventIDs[w], Data: schemas.KvCacheEventData{Kind: schemas.KindStored,
				Stored: &schemas.KvCacheStoreData{Blocks: blocks}}}})
		if err != nil {
			return err
		}
		if _, err := js.Publish(ctx, streams.KVEventSubject(uint64(w+1)), body); err != nil {
			return err
		}
	}
	return nil
}

func deleteConsumer(js jetstream.JetStream, stream, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, name)
}

// progress prints line(elapsed) every every until the returned stop.
func progress(w io.Writer, every time.Duration, line func(time.Duration) string) (stop func()) {
	if w == nil {
		return func() {}
	}
	began := time.Now()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintln(w, line(time.Since(began)))
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(quit); <-done }) }
}
