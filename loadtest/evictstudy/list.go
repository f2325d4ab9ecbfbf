package evictstudy

// arena holds the links of intrusive doubly linked lists over keys: a key
// is on at most one of an arena's lists at a time.
type arena struct {
	prev, next []Key
	on         []int8 // the list a key is on, or -1
}

const nilKey Key = -1

func newArena(keys int) *arena {
	a := &arena{prev: make([]Key, keys), next: make([]Key, keys), on: make([]int8, keys)}
	for i := range a.on {
		a.on[i] = -1
	}
	return a
}

// list is a queue of keys: front is the most recent.
type list struct {
	a          *arena
	id         int8
	head, tail Key
	n          int
}

func (a *arena) list(id int8) *list { return &list{a: a, id: id, head: nilKey, tail: nilKey} }

func (l *list) has(k Key) bool { return l.a.on[k] == l.id }

func (l *list) pushFront(k Key) {
	a := l.a
	a.on[k] = l.id
	a.prev[k], a.next[k] = nilKey, l.head
	if l.head != nilKey {
		a.prev[l.head] = k
	} else {
		l.tail = k
	}
	l.head = k
	l.n++
}

func (l *list) remove(k Key) {
	a := l.a
	if p := a.prev[k]; p != nilKey {
		a.next[p] = a.next[k]
	} else {
		l.head = a.next[k]
	}
	if n := a.next[k]; n != nilKey {
		a.prev[n] = a.prev[k]
	} else {
		l.tail = a.prev[k]
	}
	a.on[k] = -1
	l.n--
}

func (l *list) moveFront(k Key) {
	l.remove(k)
	l.pushFront(k)
}

// popBack removes and returns the least recent key, or nilKey.
func (l *list) popBack() Key {
	k := l.tail
	if k != nilKey {
		l.remove(k)
	}
	return k
}

// hitsFirst returns keys in the order the policies here take a request's
// write-through: the resident ones, then the rest, each from the deepest
// page up, so that a prompt's first page is its most recent and a page
// the request holds is refreshed before its new pages push anything out.
func hitsFirst(dst []Key, keys []Key, resident func(Key) bool) []Key {
	dst = dst[:0]
	for i := len(keys) - 1; i >= 0; i-- {
		if resident(keys[i]) {
			dst = append(dst, keys[i])
		}
	}
	for i := len(keys) - 1; i >= 0; i-- {
		if !resident(keys[i]) {
			dst = append(dst, keys[i])
		}
	}
	return dst
}
