package replay

import (
	"context"
	"sync"

	"github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
)

// memRequests keeps the replayed requests, so responses find theirs
// without touching the live group's index.
type memRequests struct {
	mu   sync.Mutex
	reqs map[string]memEntry
}

type memEntry struct {
	e   pins.IndexEntry
	req *schemas.RequestEvent
}

func newMemRequests() *memRequests { return &memRequests{reqs: map[string]memEntry{}} }

func (m *memRequests) Put(_ context.Context, req *schemas.RequestEvent, e pins.IndexEntry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reqs[req.RequestID] = memEntry{e: e, req: req}
	return nil
}

func (m *memRequests) Entry(_ context.Context, id string) (pins.IndexEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	me, ok := m.reqs[id]
	if !ok {
		return pins.IndexEntry{}, pins.ErrRequestNotFound
	}
	return me.e, nil
}

// Request returns the replayed request itself.
func (m *memRequests) Request(_ context.Context, id string, _ pins.IndexEntry) (*schemas.RequestEvent, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if me, ok := m.reqs[id]; ok && me.req != nil {
		return me.req, nil
	}
	return nil, pins.ErrRequestNotFound
}
