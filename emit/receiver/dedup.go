package receiver

// window remembers the last n message ids: a bounded set, oldest first
// out, so a receiver's memory does not grow with the ids it has seen.
type window struct {
	ring []string
	next int
	set  map[string]struct{}
}

func newWindow(n int) *window {
	return &window{ring: make([]string, n), set: make(map[string]struct{}, n)}
}

// add records id and reports whether it was new.
func (w *window) add(id string) bool {
	if _, ok := w.set[id]; ok {
		return false
	}
	if old := w.ring[w.next]; old != "" {
		delete(w.set, old)
	}
	w.ring[w.next] = id
	w.set[id] = struct{}{}
	w.next = (w.next + 1) % len(w.ring)
	return true
}
