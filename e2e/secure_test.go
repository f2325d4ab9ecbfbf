package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// TestSecuredBusAndCurveWorker: the binary on a NATS server that requires
// a token, sending a wake-up's prefetch to a worker whose hint socket is a
// CURVE server (its key in the registry record). The token comes from the
// environment, as an operator would pass a secret.
func TestSecuredBusAndCurveWorker(t *testing.T) {
	if !zmq.HasCurve() {
		t.Fatal("libzmq without CURVE support")
	}
	const token = "s3cr3t-token"
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true,
		StoreDir: t.TempDir(), Authorization: token, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if _, err := nats.Connect(srv.ClientURL()); err == nil {
		t.Fatal("the server accepted a connection without its token")
	}
	nc, err := nats.Connect(srv.ClientURL(), nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()

	// The worker's hint socket: a CURVE server.
	pub, sec, err := zmq.NewCurveKeypair()
	if err != nil {
		t.Fatal(err)
	}
	pull, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	defer pull.Close()
	_ = pull.SetCurveServer(1)
	_ = pull.SetCurveSecretkey(sec)
	_ = pull.SetRcvtimeo(10 * time.Second)
	_ = pull.SetLinger(0)
	if err := pull.Bind("tcp://127.0.0.1:*"); err != nil {
		t.Fatal(err)
	}
	ep, _ := pull.GetLastEndpoint()
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: model, KvBlockSize: 16,
		HintEndpoints: []string{ep}, HintCurvePublicKey: pub}); err != nil {
		t.Fatal(err)
	}

	p := startEnv(t, []string{"HINTSTREAM_NATS_TOKEN=" + token}, "run", "--nats-url", srv.ClientURL())
	p.waitLine(t, 30*time.Second, "hintstream running")
	if _, err := streams.EnsureSet(ctx, js, streams.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	publishRequest(t, ctx, js, wake("secure-1", "s", seq(1, 64)))
	b, err := pull.RecvBytes(0)
	if err != nil {
		t.Fatalf("no hint over CURVE: %v", err)
	}
	var env schemas.KvHintsEnvelope
	var pl schemas.PrefetchPayload
	if _, err := env.UnmarshalMsg(b); err != nil || len(env.Actions) != 1 {
		t.Fatalf("envelope: %v", err)
	}
	if _, err := pl.UnmarshalMsg(env.Actions[0].Payload); err != nil || pl.RequestID != "secure-1" {
		t.Fatalf("payload %+v: %v", pl, err)
	}
	p.stop(t)
}
