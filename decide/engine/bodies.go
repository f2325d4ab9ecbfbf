package engine

import "github.com/hintstream/hintstream/schemas"

// bodyPool recycles the envelope buffers of prefetches: a
// 2,048-token kv.prefetch is about 10 KB, allocated and collected once
// per wake-up before. The sender hands a body back (actions.Hint.Release)
// once ZMQ has copied it, which for an idle endpoint is before Send
// returns; a channel rather than a sync.Pool, whose Put of a slice
// allocates.
type bodyPool struct {
	free    chan []byte
	release func([]byte) // put, as one func value: a method value allocates
}

// bodyPoolSize bounds the buffers kept: bodies are back within a send,
// so a few cover the hints in flight; more are allocated and collected.
const bodyPoolSize = 32

// maxPooledBody keeps one huge prompt's buffer from being held forever.
const maxPooledBody = 1 << 20

func newBodyPool() *bodyPool {
	p := &bodyPool{free: make(chan []byte, bodyPoolSize)}
	p.release = p.put
	return p
}

// get returns an empty buffer, recycled when one is free.
func (p *bodyPool) get() []byte {
	select {
	case b := <-p.free:
		return b
	default:
		return nil
	}
}

func (p *bodyPool) put(b []byte) {
	if cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	select {
	case p.free <- b[:0]:
	default:
	}
}

// requestPool recycles decoded request events, with their token
// memory (schemas.Limits.DecodeRequestInto): 8 KB per 2,048-token
// wake-up otherwise allocated and collected.
type requestPool struct{ free chan *schemas.RequestEvent }

func newRequestPool() *requestPool {
	return &requestPool{free: make(chan *schemas.RequestEvent, bodyPoolSize)}
}

func (p *requestPool) get() *schemas.RequestEvent {
	select {
	case r := <-p.free:
		return r
	default:
		return new(schemas.RequestEvent)
	}
}

func (p *requestPool) put(r *schemas.RequestEvent) {
	if cap(r.TokenIDs) > maxPooledBody/4 {
		return
	}
	*r = schemas.RequestEvent{TokenIDs: r.TokenIDs[:0]}
	select {
	case p.free <- r:
	default:
	}
}
