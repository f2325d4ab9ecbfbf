package e2e

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// TestPrefetchAffinity: a wake-up's prefetch goes to the worker caching
// its prompt, hintstream records that worker under the session in the
// affinity bucket, and client.PreferredWorker gives it to the frontend as
// Dynamo's pin headers until the prefetch expires. An independent reader
// (Python) decodes the key and the record. With --affinity-bucket ""
// nothing is recorded.
func TestPrefetchAffinity(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	sink := pypeer.StartSink(t, 2)
	eps := sink.Endpoints()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	for id := uint64(1); id <= 2; id++ {
		if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: id, Model: model, KvBlockSize: 16, HintEndpoints: []string{eps[id-1]}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	prompt := seq(9000, 6*16)
	publishStored(t, ctx, js, 2, prompt[:4*16])

	p := start(t, "run", "--nats-url", srv.ClientURL(), "--prefetch-ttl", "3s")
	p.waitLine(t, 30*time.Second, "hintstream running")
	const session = "user/42 thread.7" // not a valid KV key as it is
	sent := time.Now()
	publishRequest(t, ctx, js, wake("wake-aff", session, prompt))
	sink.WaitFor(t, 5*time.Second, hasRequest("wake-aff"), "prefetch for wake-aff")
	if ep := byRequest(sink.Messages(), "wake-aff")[0].Endpoint; ep != eps[1] {
		t.Fatalf("prefetch went to %s, want worker 2", ep)
	}

	aff, err := client.OpenAffinity(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	var pref client.Preferred
	natstest.Eventually(t, 5*time.Second, func() bool {
		pref, err = aff.PreferredWorker(ctx, session)
		return err == nil
	}, "no preferred worker for the session: %v", err)
	if pref.WorkerID != 2 || pref.DpRank != 0 || pref.RequestID != "wake-aff" {
		t.Fatalf("preferred %+v, want worker 2 dp rank 0 from wake-aff", pref)
	}
	// The prefetch's own expiry: received_at_ms + --prefetch-ttl.
	if d := pref.ExpiresAt.Sub(sent); d < 2*time.Second || d > 4*time.Second {
		t.Fatalf("expires %v after the wake-up, want about 3s", d)
	}
	if h := pref.Headers(); h["x-worker-instance-id"] != "2" || h["x-dp-rank"] != "0" {
		t.Fatalf("headers %v", h)
	}
	if _, err := aff.PreferredWorker(ctx, "another session"); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("unknown session: %v", err)
	}
	late := client.NewAffinity(mustKV(t, ctx, js), client.WithAffinityClock(func() time.Time { return pref.ExpiresAt }))
	if _, err := late.PreferredWorker(ctx, session); !errors.Is(err, client.ErrNoPreference) {
		t.Fatalf("at expiry: %v", err)
	}

	// The independent reader: base64url key → session, JSON → record.
	e, err := mustKV(t, ctx, js).Get(ctx, schemas.AffinityKey(session))
	if err != nil {
		t.Fatal(err)
	}
	py := `import base64, json, sys
key, val = sys.argv[1], sys.argv[2]
s = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)).decode()
r = json.loads(val)
print(s, r["worker_id"], r["dp_rank"], r["expires_at_ms"] > 0)`
	out, err := exec.Command("/usr/bin/python3", "-c", py, e.Key(), string(e.Value())).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != session+" 2 0 True" {
		t.Fatalf("python reads %q (%v)", out, err)
	}
	p.stop(t)

	// Off: a second instance with --affinity-bucket "" records nothing.
	if err := js.DeleteKeyValue(ctx, schemas.DefaultAffinityBucket); err != nil {
		t.Fatal(err)
	}
	p = start(t, "run", "--nats-url", srv.ClientURL(), "--affinity-bucket", "")
	p.waitLine(t, 30*time.Second, "hintstream running")
	publishRequest(t, ctx, js, wake("wake-off", session, prompt))
	sink.WaitFor(t, 5*time.Second, hasRequest("wake-off"), "prefetch for wake-off")
	if _, err := js.KeyValue(ctx, schemas.DefaultAffinityBucket); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("affinity off, yet the bucket: %v", err)
	}
	p.stop(t)
}

func mustKV(t *testing.T, ctx context.Context, js jetstream.JetStream) jetstream.KeyValue {
	t.Helper()
	kv, err := js.KeyValue(ctx, schemas.DefaultAffinityBucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
