package simulate

import (
	"context"

	hpins "github.com/hintstream/hintstream/decide/pins"
	"github.com/hintstream/hintstream/schemas"
)

// memRequests is the pins' request store of an in-process run: the
// requests whose response has not come yet (engineRun.response forgets
// each once its response is decided).
type memRequests struct {
	reqs map[string]memEntry
}

type memEntry struct {
	e   hpins.IndexEntry
	req *schemas.RequestEvent
}

func newMemRequests() *memRequests { return &memRequests{reqs: map[string]memEntry{}} }

func (m *memRequests) Put(_ context.Context, req *schemas.RequestEvent, e hpins.IndexEntry) error {
	m.reqs[req.RequestID] = memEntry{e: e, req: req}
	return nil
}

func (m *memRequests) Entry(_ context.Context, id string) (hpins.IndexEntry, error) {
	me, ok := m.reqs[id]
	if !ok {
		return hpins.IndexEntry{}, hpins.ErrRequestNotFound
	}
	return me.e, nil
}

func (m *memRequests) Request(_ context.Context, id string, _ hpins.IndexEntry) (*schemas.RequestEvent, error) {
	if me, ok := m.reqs[id]; ok && me.req != nil {
		return me.req, nil
	}
	return nil, hpins.ErrRequestNotFound
}

func (m *memRequests) forget(id string) { delete(m.reqs, id) }
