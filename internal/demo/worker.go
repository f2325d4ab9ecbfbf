package demo

import (
	"context"
	"strings"
	"syscall"
	"time"

	"github.com/hintstream/hintstream/schemas"
	zmq "github.com/pebbe/zmq4"
)

// worker is a simulated engine's hint socket: a PULL bound on loopback,
// owned by the receive goroutine once it starts.
type worker struct {
	id       uint64
	endpoint string
	sock     *zmq.Socket
	demo     *Demo
	done     chan struct{}
}

func newWorker(id uint64, d *Demo) (*worker, error) {
	s, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		return nil, err
	}
	// A short receive timeout lets the goroutine notice cancellation.
	if err := s.SetRcvtimeo(100 * time.Millisecond); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.SetLinger(0); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.Bind("tcp://" + d.opts.BindHost + ":*"); err != nil {
		s.Close()
		return nil, err
	}
	ep, err := s.GetLastEndpoint()
	if err != nil {
		s.Close()
		return nil, err
	}
	// The bound endpoint names the bind address; others reach it by the
	// advertised host on the same port.
	if i := strings.LastIndex(ep, ":"); i > 0 {
		ep = "tcp://" + d.opts.AdvertiseHost + ep[i:]
	}
	return &worker{id: id, endpoint: ep, sock: s, demo: d, done: make(chan struct{})}, nil
}

func (w *worker) receive(ctx context.Context) {
	defer close(w.done)
	for ctx.Err() == nil {
		b, err := w.sock.RecvBytes(0)
		if err != nil {
			if zmq.AsErrno(err) == zmq.Errno(syscall.EAGAIN) {
				continue // receive timeout: look at ctx again
			}
			if ctx.Err() == nil {
				w.demo.opts.Logger.Warn("demo worker receive", "worker_id", w.id, "err", err)
			}
			continue
		}
		if f := w.demo.opts.Forward; f != nil {
			f(w.id, b)
		}
		var env schemas.KvHintsEnvelope
		if _, err := env.UnmarshalMsg(b); err != nil || len(env.Actions) == 0 {
			w.demo.opts.Logger.Warn("demo worker got an undecodable hint", "worker_id", w.id, "err", err)
			continue
		}
		var p schemas.PrefetchPayload
		if _, err := p.UnmarshalMsg(env.Actions[0].Payload); err != nil {
			w.demo.opts.Logger.Warn("demo worker got an undecodable payload", "worker_id", w.id, "err", err)
			continue
		}
		w.demo.record(Received{WorkerID: w.id, RequestID: p.RequestID, SessionID: p.SessionID,
			Tokens: len(p.TokenIDs), DpRank: p.DpRank, ExpiresAt: time.UnixMilli(p.ExpiresAtMs)})
	}
}

// close waits for the receive goroutine (which exits on ctx) and closes
// the socket from here, after the goroutine no longer uses it.
func (w *worker) close() {
	<-w.done
	w.sock.Close()
}
