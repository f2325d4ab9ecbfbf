package demo

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hintstream/hintstream/emit/receiver"
)

// PinEvent is one kv.pin the simulated Mooncake master got.
type PinEvent struct {
	Slot     string
	Kind     string // "pin", "renewal" or "release"
	Keys     int
	TTL      time.Duration
	Priority int64
}

// Master is a simulated Mooncake master: a receiver.Receiver at the pin
// endpoint that prints each pin, renewal and release in the demo's
// style. Bind it before hintstream starts (it is the pin endpoint), give
// it to the demo in Options.Master; the demo runs and closes it.
type Master struct {
	r *receiver.Receiver

	mu     sync.Mutex
	pinned map[string]bool // slots pinned and not yet released
	events []PinEvent
	out    func(format string, args ...any)
}

// NewMaster binds the master's PULL socket on bindHost (a free port).
func NewMaster(bindHost string) (*Master, error) {
	if bindHost == "" {
		bindHost = "127.0.0.1"
	}
	m := &Master{pinned: map[string]bool{}, out: func(string, ...any) {}}
	r, err := receiver.New("tcp://"+bindHost+":*", m.handle)
	if err != nil {
		return nil, err
	}
	m.r = r
	return m, nil
}

// Endpoint is the pin endpoint to give hintstream.
func (m *Master) Endpoint() string { return m.r.Endpoint() }

// Close closes a master that the demo never ran.
func (m *Master) Close() { m.r.Close() }

// Pins returns what the master got so far.
func (m *Master) Pins() []PinEvent {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]PinEvent(nil), m.events...)
}

func (m *Master) run(ctx context.Context, out func(format string, args ...any)) {
	m.mu.Lock()
	m.out = out
	m.mu.Unlock()
	if err := m.r.Run(ctx); err != nil {
		out("demo: Mooncake master stopped: %v\n", err)
	}
}

func (m *Master) handle(_ context.Context, h receiver.Hint) {
	if h.Pin == nil {
		return
	}
	p := h.Pin
	ev := PinEvent{Slot: p.Slot, Keys: len(p.Keys), TTL: time.Duration(p.TTLMs) * time.Millisecond, Priority: p.Priority}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case p.TTLMs == 0:
		ev.Kind = "release"
		delete(m.pinned, p.Slot)
		m.out("demo: ← Mooncake master got the release of %s (the session's next turn came)\n", p.Slot)
	case m.pinned[p.Slot]:
		ev.Kind = "renewal"
		m.out("demo: ← Mooncake master got a renewal of %s (%d keys, TTL %v, priority %d: the tool is still running)\n",
			p.Slot, ev.Keys, ev.TTL, p.Priority)
	default:
		ev.Kind = "pin"
		m.pinned[p.Slot] = true
		m.out("demo: ← Mooncake master got kv.pin for %s (%d keys, TTL %v, priority %d, %d tokens; e.g. %s)\n",
			p.Slot, ev.Keys, ev.TTL, p.Priority, p.Tokens, firstKey(p.Keys))
	}
	m.events = append(m.events, ev)
}

func firstKey(keys []string) string {
	if len(keys) == 0 {
		return "no keys"
	}
	k := keys[0]
	if i := strings.LastIndex(k, "_"); len(k) > 60 && i > 0 {
		return fmt.Sprintf("%s…%s", k[:32], k[i:])
	}
	return k
}
