package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// TestModelsConsumesEitherSpelling: a frontend publishing on the
// literal subject llm.requests.Qwen/Qwen2.5-7B (dots kept) was never
// consumed by a `--models Qwen/Qwen2.5-7B` member; both that subject
// and the documented llm.requests.Qwen/Qwen2_5-7B are now hinted.
func TestModelsConsumesEitherSpelling(t *testing.T) {
	const dotted = "Qwen/Qwen2.5-7B"
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	sink := newFaultSink(t, 0)
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: dotted, KvBlockSize: 16,
		HintEndpoints: []string{sink.ep}}); err != nil {
		t.Fatal(err)
	}
	p := start(t, "run", "--nats-url", srv.ClientURL(), "--log-format", "json", "--models", dotted)
	p.waitLine(t, 30*time.Second, "hintstream running")
	for id, subj := range map[string]string{"lit-1": "llm.requests." + dotted, "doc-1": streams.RequestSubject(dotted)} {
		ev := wake(id, "s-"+id, seq(1, 64))
		ev.Model = dotted
		b, _ := json.Marshal(ev)
		if _, err := js.Publish(ctx, subj, b); err != nil {
			t.Fatalf("publish on %s: %v", subj, err)
		}
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		return sink.count(actions.PrefetchMessageID("lit-1")) > 0 && sink.count(actions.PrefetchMessageID("doc-1")) > 0
	}, "both spellings hinted")
	p.stop(t)
}
