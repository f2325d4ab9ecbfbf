package pins

import (
	"context"
	"sync"
)

// MemSlots is a SlotStore in memory, for runs that must not touch a
// group's buckets (replay, what-if runs). Its revision is one counter
// over all slots, as a KV bucket's sequence is, so revisions order a
// slot's pins and releases exactly as the bucket's would.
type MemSlots struct {
	mu    sync.Mutex
	slots map[string]PinRecord
	rev   uint64
}

// NewMemSlots returns an empty MemSlots.
func NewMemSlots() *MemSlots { return &MemSlots{slots: map[string]PinRecord{}} }

// Put records the session's pin.
func (m *MemSlots) Put(_ context.Context, session string, r PinRecord) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slots[session] = r
	m.rev++
	return m.rev, nil
}

// Renew sets the expiry of the session's pin if it is still trigger's.
func (m *MemSlots) Renew(_ context.Context, session, trigger string, expiresAtMs int64) (uint64, bool, error) {
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

// Take removes the session's pin unless it is keep's.
func (m *MemSlots) Take(_ context.Context, session, keep string) (PinRecord, uint64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.slots[session]
	if !ok || (keep != "" && r.Trigger == keep) {
		return PinRecord{}, 0, false, nil
	}
	delete(m.slots, session)
	m.rev++
	return r, m.rev, true, nil
}

// Prune drops the records of pins that expired before beforeMs and
// returns how many it dropped. An expired pin is neither renewed nor
// released (Pins checks the expiry first), so a long replay or what-if
// run that prunes now and then holds the sessions of the recent past,
// not every session that ended on a pin.
func (m *MemSlots) Prune(beforeMs int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for s, r := range m.slots {
		if r.ExpiresAtMs < beforeMs {
			delete(m.slots, s)
			n++
		}
	}
	return n
}

// Len is the number of sessions with a pin record.
func (m *MemSlots) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.slots)
}
