package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
	zmq "github.com/pebbe/zmq4"
)

// PinSocket is Hint.Socket for the Mooncake master's pin socket.
const PinSocket = -1

// Hint is one envelope received on a socket, decoded.
type Hint struct {
	// Socket is the worker index whose hint socket got it, or PinSocket.
	Socket     int
	MessageID  string
	Prefetches []schemas.PrefetchPayload
	Pins       []schemas.PinPayload
	// Err is set when the envelope or an action could not be decoded;
	// the actions decoded before it are kept.
	Err error
}

// Endpoints are the cluster's real ZMQ PULL sockets on 127.0.0.1: one
// hint socket per worker and the L3 store's pin socket. Each socket is
// owned by one goroutine that decodes what arrives and queues it on
// Hints; the simulation applies them on its own goroutine.
type Endpoints struct {
	workers []string
	pin     string
	hints   chan Hint
	recv    atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Listen binds workers hint sockets and a pin socket on free loopback
// ports. Close releases them.
func Listen(workers int) (*Endpoints, error) {
	e := &Endpoints{hints: make(chan Hint, 4096), stop: make(chan struct{})}
	for i := -1; i < workers; i++ {
		s, ep, err := bindPull()
		if err != nil {
			e.Close()
			return nil, err
		}
		if i == PinSocket {
			e.pin = ep
		} else {
			e.workers = append(e.workers, ep)
		}
		e.wg.Add(1)
		go e.serve(s, i)
	}
	return e, nil
}

func bindPull() (*zmq.Socket, string, error) {
	s, err := zmq.NewSocket(zmq.PULL)
	if err != nil {
		return nil, "", fmt.Errorf("cluster: pull socket: %w", err)
	}
	// A short receive timeout lets the goroutine notice Close.
	for _, set := range []func() error{
		func() error { return s.SetRcvtimeo(20 * time.Millisecond) },
		func() error { return s.SetLinger(0) },
		func() error { return s.Bind("tcp://127.0.0.1:*") },
	} {
		if err := set(); err != nil {
			s.Close()
			return nil, "", fmt.Errorf("cluster: pull socket: %w", err)
		}
	}
	ep, err := s.GetLastEndpoint()
	if err != nil {
		s.Close()
		return nil, "", fmt.Errorf("cluster: pull socket: %w", err)
	}
	return s, ep, nil
}

func (e *Endpoints) serve(s *zmq.Socket, socket int) {
	defer e.wg.Done()
	defer s.Close()
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		b, err := s.RecvBytes(0)
		if err != nil {
			if zmq.AsErrno(err) == zmq.ETERM {
				return
			}
			continue // EAGAIN: receive timeout, look at stop again
		}
		h := Decode(b)
		h.Socket = socket
		e.recv.Add(1)
		select {
		case e.hints <- h:
		case <-e.stop:
			return
		}
	}
}

// WorkerEndpoints are the hint sockets, index = worker.
func (e *Endpoints) WorkerEndpoints() []string { return e.workers }

// PinEndpoint is the pin socket (DYN_KVM_PIN_ENDPOINT).
func (e *Endpoints) PinEndpoint() string { return e.pin }

// Hints delivers every envelope received, in arrival order per socket.
func (e *Endpoints) Hints() <-chan Hint { return e.hints }

// Received counts envelopes received so far (queued on Hints or taken).
func (e *Endpoints) Received() int64 { return e.recv.Load() }

// Close stops the goroutines and closes the sockets; safe to call twice.
func (e *Endpoints) Close() {
	e.once.Do(func() { close(e.stop) })
	e.wg.Wait()
}

// Decode decodes a KvHintsEnvelope and its kv.prefetch and kv.pin
// actions, as a worker scheduler and the Mooncake master would. It never
// panics; what it cannot read is in Err.
func Decode(b []byte) Hint {
	var env schemas.KvHintsEnvelope
	if _, err := env.UnmarshalMsg(b); err != nil {
		return Hint{Err: fmt.Errorf("cluster: envelope: %w", err)}
	}
	h := Hint{MessageID: env.MessageID}
	for _, a := range env.Actions {
		switch a.ActionType {
		case actions.ActionPrefetch:
			var p schemas.PrefetchPayload
			if _, err := p.UnmarshalMsg(a.Payload); err != nil {
				h.Err = fmt.Errorf("cluster: %s payload: %w", a.ActionType, err)
				return h
			}
			h.Prefetches = append(h.Prefetches, p)
		case actions.ActionPin:
			var p schemas.PinPayload
			if _, err := p.UnmarshalMsg(a.Payload); err != nil {
				h.Err = fmt.Errorf("cluster: %s payload: %w", a.ActionType, err)
				return h
			}
			h.Pins = append(h.Pins, p)
		default:
			h.Err = fmt.Errorf("cluster: unknown action %q", a.ActionType)
			return h
		}
	}
	return h
}

// JetStreamSink publishes KV events (RouterEvent JSON) on
// kv.events.<worker_id> and loads (JSON) on kv.load.<worker_id>, each
// publish waiting for its ack so that the stream holds every event before
// the simulation moves on.
type JetStreamSink struct {
	Ctx context.Context
	JS  jetstream.JetStream
}

// KVEvent implements EventSink.
func (s *JetStreamSink) KVEvent(ev *schemas.RouterEvent) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("cluster: encode KV event: %w", err)
	}
	_, err = s.JS.Publish(s.Ctx, streams.KVEventSubject(ev.WorkerID), b)
	return err
}

// Load implements EventSink.
func (s *JetStreamSink) Load(l *schemas.ActiveLoad) error {
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("cluster: encode load: %w", err)
	}
	_, err = s.JS.Publish(s.Ctx, streams.LoadSubject(l.WorkerID), b)
	return err
}

// Register puts the cluster's workers in the registry bucket (created
// when absent), each with its object layout so pins can name its pages.
func (c *Cluster) Register(ctx context.Context, js jetstream.JetStream, bucket string) error {
	kv, err := registry.Bucket(ctx, js, bucket)
	if err != nil {
		return err
	}
	for _, rec := range c.Records() {
		if err := registry.Put(ctx, kv, rec); err != nil {
			return err
		}
	}
	return nil
}
