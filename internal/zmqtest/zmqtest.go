// Package zmqtest binds real PULL sockets on loopback for tests: the
// receiving end of hints, owned by one goroutine until test cleanup.
package zmqtest

import (
	"syscall"
	"testing"
	"time"

	zmq "github.com/pebbe/zmq4"
)

// Serve binds sock (a PULL socket, already configured, e.g. as a CURVE
// server) at endpoint ("tcp://127.0.0.1:*" for a free port) and calls
// recv with every message on one goroutine until the test ends. It
// returns the bound endpoint. The socket belongs to Serve from then on.
func Serve(t testing.TB, sock *zmq.Socket, endpoint string, recv func([]byte)) string {
	t.Helper()
	// A short receive timeout lets the goroutine notice the test's end.
	if err := sock.SetRcvtimeo(20 * time.Millisecond); err != nil {
		sock.Close()
		t.Fatal(err)
	}
	if err := sock.SetLinger(0); err != nil {
		sock.Close()
		t.Fatal(err)
	}
	if err := sock.Bind(endpoint); err != nil {
		sock.Close()
		t.Fatalf("bind %s: %v", endpoint, err)
	}
	bound, err := sock.GetLastEndpoint()
	if err != nil {
		sock.Close()
		t.Fatal(err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		defer sock.Close()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := sock.RecvBytes(0)
			if err != nil {
				if zmq.AsErrno(err) == zmq.Errno(syscall.EAGAIN) {
					continue
				}
				if zmq.AsErrno(err) == zmq.ETERM {
					return
				}
				continue
			}
			recv(b)
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return bound
}

// Pull binds a plain PULL socket at endpoint and returns the bound
// endpoint and a channel of what it receives (buffered to buf).
func Pull(t testing.TB, endpoint string, buf int) (string, <-chan []byte) {
	t.Helper()
	sock, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan []byte, buf)
	return Serve(t, sock, endpoint, func(b []byte) { out <- b }), out
}
