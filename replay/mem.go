package replay

import (
	"context"
	"sync"

	"github.com/hintstream/hintstream/pins"
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

type memSlots struct {
	mu    sync.Mutex
	slots map[string]pins.PinRecord
	rev   uint64 // as a KV bucket's sequence: one per write, over all slots
}

func newMemSlots() *memSlots { return &memSlots{slots: map[string]pins.PinRecord{}} }

func (m *memSlots) Put(_ context.Context, session string, r pins.PinRecord) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slots[session] = r
	m.rev++
	return m.rev, nil
}

func (m *memSlots) Renew(_ context.Context, session, trigger string, expiresAtMs int64) (uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.slots[session]
	if !ok || r.Trigger != trigger {
		return 0, false, nil
	}
	r.ExpiresAtMs = expiresAtMs
	m.slots[session] = r
	m.rev++
	return m.rev, true, nil
}

func (m *memSlots) Take(_ context.Context, session, keep string) (pins.PinRecord, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.slots[session]
	if !ok || (keep != "" && r.Trigger == keep) {
		return pins.PinRecord{}, 0, false, nil
	}
	delete(m.slots, session)
	m.rev++
	return r, m.rev, true, nil
}
