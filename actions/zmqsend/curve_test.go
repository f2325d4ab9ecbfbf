package zmqsend_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/zmqtest"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/actions/zmqsend"
	"github.com/hintstream/hintstream/internal/natstest"
	zmq "github.com/pebbe/zmq4"
)

// curvePuller binds a PULL socket on loopback that is a CURVE server with
// serverSecret, like a worker's scheduler with CURVE on, and returns its
// endpoint and the messages it receives.
func curvePuller(t *testing.T, serverSecret string) (string, <-chan []byte) {
	t.Helper()
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []func() error{
		func() error { return sock.SetCurveServer(1) },
		func() error { return sock.SetCurveSecretkey(serverSecret) },
	} {
		if err := set(); err != nil {
			sock.Close()
			t.Fatal(err)
		}
	}
	out := make(chan []byte, 100)
	return zmqtest.Serve(t, sock, "tcp://127.0.0.1:*", func(b []byte) { out <- b }), out
}

func curveKeys(t *testing.T) (public, secret string) {
	t.Helper()
	public, secret, err := zmq.NewCurveKeypair()
	if err != nil {
		t.Fatal(err)
	}
	return public, secret
}

// syncBuffer collects the pool's debug logs, written by its senders.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func debugLogger(b *syncBuffer) zmqsend.PoolOption {
	return zmqsend.WithLogger(slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})))
}

func assertNoKeys(t *testing.T, logs string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if k != "" && strings.Contains(logs, k) {
			t.Fatalf("a CURVE key appears in the logs:\n%s", logs)
		}
	}
}

// serverKeyFor returns a CurveServerKeyFunc that knows key for endpoint only.
func serverKeyFor(endpoint, key string) zmqsend.CurveServerKeyFunc {
	return func(ep string) (string, bool) { return key, ep == endpoint }
}

// assertUndelivered waits for the hint to expire in the pool and checks
// the server got nothing.
func assertUndelivered(t *testing.T, p *zmqsend.Pool, ep string, ch <-chan []byte) {
	t.Helper()
	natstest.Eventually(t, 5*time.Second, func() bool {
		return p.Stats()[ep].Dropped[actions.DropExpired] == 1
	}, "hint expires undelivered")
	if st := p.Stats()[ep]; st.Sent != 0 || st.Retried == 0 {
		t.Fatalf("stats %+v: want nothing sent and retries while the handshake fails", st)
	}
	select {
	case b := <-ch:
		t.Fatalf("CURVE server received %q", b)
	default:
	}
}

func TestCurveDelivers(t *testing.T) {
	if !zmq.HasCurve() {
		t.Fatal("libzmq has no CURVE support; install libzmq built with libsodium")
	}
	serverPub, serverSec := curveKeys(t)
	ep, ch := curvePuller(t, serverSec)
	var logs syncBuffer
	p := newPool(t, zmqsend.WithCurve(serverKeyFor(ep, serverPub)), debugLogger(&logs))
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if k := p.CurvePublicKey(); len(k) != 40 {
		t.Fatalf("client public key %q: want 40 Z85 characters", k)
	}
	if err := p.Send(ep, hint(1, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, ch, 1, 5*time.Second); got[0] != "h-1" {
		t.Fatalf("received %q", got[0])
	}
	natstest.Eventually(t, time.Second, func() bool { return p.Stats()[ep].Sent == 1 }, "sent count")
	assertNoKeys(t, logs.String(), serverPub, serverSec)
}

func TestCurveClientKeys(t *testing.T) {
	serverPub, serverSec := curveKeys(t)
	clientPub, clientSec := curveKeys(t)
	ep, ch := curvePuller(t, serverSec)
	var logs syncBuffer
	p := newPool(t, zmqsend.WithCurve(serverKeyFor(ep, serverPub)), zmqsend.WithCurveClientKeys(clientPub, clientSec), debugLogger(&logs))
	if got := p.CurvePublicKey(); got != clientPub {
		t.Fatalf("CurvePublicKey = %q, want the given one", got)
	}
	if err := p.Send(ep, hint(2, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
	assertNoKeys(t, logs.String(), serverPub, serverSec, clientSec)
}

func TestCurveServerRejectsPlainClient(t *testing.T) {
	_, serverSec := curveKeys(t)
	ep, ch := curvePuller(t, serverSec)
	p := newPool(t) // no WithCurve
	if err := p.Send(ep, hint(3, 300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	assertUndelivered(t, p, ep, ch)
}

func TestCurveWrongServerKey(t *testing.T) {
	_, serverSec := curveKeys(t)
	otherPub, otherSec := curveKeys(t)
	ep, ch := curvePuller(t, serverSec)
	var logs syncBuffer
	p := newPool(t, zmqsend.WithCurve(serverKeyFor(ep, otherPub)), debugLogger(&logs))
	if err := p.Send(ep, hint(4, 300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	assertUndelivered(t, p, ep, ch)
	assertNoKeys(t, logs.String(), otherPub, otherSec, serverSec)
}

func TestCurveBadKeys(t *testing.T) {
	pub, sec := curveKeys(t)
	otherPub, _ := curveKeys(t)
	ep := downEndpoint(t)
	hasServerKey := zmqsend.WithCurve(serverKeyFor(ep, pub))
	for name, opt := range map[string]zmqsend.PoolOption{
		"short public":      zmqsend.WithCurveClientKeys(pub[:39], sec),
		"non-Z85 secret":    zmqsend.WithCurveClientKeys(pub, strings.Repeat("~", 40)),
		"mismatched pair":   zmqsend.WithCurveClientKeys(otherPub, sec),
		"only a public key": zmqsend.WithCurveClientKeys(pub, ""),
	} {
		p := newPool(t, hasServerKey, opt)
		if err := p.Err(); !errors.Is(err, zmqsend.ErrCurveKey) {
			t.Errorf("%s: Err() = %v, want ErrCurveKey", name, err)
		}
		err := p.Send(ep, hint(5, time.Second))
		if !errors.Is(err, zmqsend.ErrCurveKey) {
			t.Errorf("%s: Send = %v, want ErrCurveKey", name, err)
		} else if strings.Contains(err.Error(), sec) || strings.Contains(err.Error(), pub[:39]) {
			t.Errorf("%s: error reveals a key: %v", name, err)
		}
		if p.CurvePublicKey() != "" {
			t.Errorf("%s: CurvePublicKey of a broken pool should be empty", name)
		}
	}

	// A malformed server key fails that endpoint only, at Send.
	badServer := strings.Repeat("a", 39) + "\x00"
	p := newPool(t, zmqsend.WithCurve(serverKeyFor(ep, badServer)))
	if err := p.Err(); err != nil {
		t.Fatalf("Err() = %v: a server key is only checked per endpoint", err)
	}
	err := p.Send(ep, hint(6, time.Second))
	if !errors.Is(err, zmqsend.ErrCurveKey) || !errors.Is(err, actions.ErrEndpoint) {
		t.Fatalf("Send with a malformed server key = %v, want ErrEndpoint and ErrCurveKey", err)
	}
	if strings.Contains(err.Error(), badServer[:39]) {
		t.Fatalf("error reveals the key: %v", err)
	}
	if eps := p.Endpoints(); len(eps) != 0 {
		t.Fatalf("a sender was created for %v", eps)
	}
	// Endpoints the function does not know stay plain text.
	plainEp, ch := puller(t, "tcp://127.0.0.1:*")
	if err := p.Send(plainEp, hint(7, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	receive(t, ch, 1, 5*time.Second)
}
