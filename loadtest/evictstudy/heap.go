package evictstudy

// worstHeap is an indexed binary heap of keys with the worst key on top,
// by a comparison the policy gives over its own per-key state; fix
// restores the order after a key's state changed.
type worstHeap struct {
	items []Key
	pos   []int32 // index in items, or -1
	worse func(a, b Key) bool
}

func newWorstHeap(keys int, worse func(a, b Key) bool) *worstHeap {
	h := &worstHeap{pos: make([]int32, keys), worse: worse}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *worstHeap) has(k Key) bool { return h.pos[k] >= 0 }
func (h *worstHeap) len() int       { return len(h.items) }
func (h *worstHeap) top() Key       { return h.items[0] }

func (h *worstHeap) push(k Key) {
	h.pos[k] = int32(len(h.items))
	h.items = append(h.items, k)
	h.up(len(h.items) - 1)
}

// pop removes and returns the worst key.
func (h *worstHeap) pop() Key {
	k := h.items[0]
	h.removeAt(0)
	return k
}

func (h *worstHeap) fix(k Key) {
	i := int(h.pos[k])
	if !h.down(i) {
		h.up(i)
	}
}

func (h *worstHeap) removeAt(i int) {
	last := len(h.items) - 1
	k := h.items[i]
	if i != last {
		h.swap(i, last)
	}
	h.items = h.items[:last]
	h.pos[k] = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *worstHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]] = int32(i)
	h.pos[h.items[j]] = int32(j)
}

func (h *worstHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.worse(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts i toward the leaves and reports whether it moved.
func (h *worstHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.worse(h.items[r], h.items[l]) {
			c = r
		}
		if !h.worse(h.items[c], h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
