package receiver

import "container/list"

// DefaultSlotWindow is how many pin slots a Receiver remembers the last
// applied revision of (least recently used out): at ~100 bytes a slot,
// 6.5 MB. A slot forgotten accepts its next message whatever its
// revision, as a receiver that just started does.
const DefaultSlotWindow = 65536

// slotRevisions is the revision rule of docs/wire.md: a kv.pin message
// (pin, renewal or release) carrying a revision is applied only when it
// is above the last applied to its slot. The same rule as vLLM's
// vllm.set_priority claims ("Higher revisions replace that claim's value
// and TTL ... Same/older revisions cannot renew TTL", vllm
// vllm/v1/kv_hints/README.md@7966f717dd4eb09461dd97102db1352c924bbf50),
// with the slot as the claim.
type slotRevisions struct {
	n     int
	order *list.List // of *slotRev, most recently applied at the front
	by    map[string]*list.Element
}

type slotRev struct {
	slot string
	rev  uint64
}

func newSlotRevisions(n int) *slotRevisions {
	return &slotRevisions{n: n, order: list.New(), by: make(map[string]*list.Element)}
}

// apply reports whether a message of revision rev for slot is to be
// applied, and if so records rev. Revision 0 (a sender that does not
// order) is always applied and changes nothing.
func (s *slotRevisions) apply(slot string, rev uint64) bool {
	if rev == 0 {
		return true
	}
	if e, ok := s.by[slot]; ok {
		r := e.Value.(*slotRev)
		if rev <= r.rev {
			return false
		}
		r.rev = rev
		s.order.MoveToFront(e)
		return true
	}
	if s.order.Len() >= s.n {
		old := s.order.Back()
		s.order.Remove(old)
		delete(s.by, old.Value.(*slotRev).slot)
	}
	s.by[slot] = s.order.PushFront(&slotRev{slot: slot, rev: rev})
	return true
}
