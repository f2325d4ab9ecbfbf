package simulate

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
)

// The clairvoyant bound without holding the trace: Belady needs every
// access's next use, which a backward pass over the whole trace gives.
// A tape does it forward instead, on disk: each block occurrence is
// appended with "never" as its next use, and when the block comes again
// the previous occurrence's slot is patched (in the in-memory tail, or
// by a positioned write into the file). What stays in memory is a map
// from each distinct block to its latest occurrence and the tail; the
// second pass reads the tape front to back.

// never is the next use of an occurrence whose block does not come again.
const never = math.MaxInt32

// tapeEntry is one block occurrence: the block, the request that next
// holds it (never: none) and where in that request's blocks. 16 bytes on
// the tape.
type tapeEntry struct {
	block       uint64
	next, nextK int32
}

const tapeEntrySize = 16

// defaultTapeTail is how many of the latest occurrences a tape keeps in
// memory before writing them out: most reuses are patched there.
const defaultTapeTail = 1 << 18

type tape struct {
	f        *os.File
	last     map[uint64]int64 // block → its latest occurrence
	tail     []tapeEntry      // occurrences [tailFrom, n)
	tailFrom int64
	tailCap  int
	n        int64
	// Patched counts positioned writes into the file (reuses further
	// back than the tail).
	patched int64
	scratch [8]byte
}

// newTape makes a tape in a temporary file under dir ("" : the system's
// temporary directory); close removes it.
func newTape(dir string) (*tape, error) {
	f, err := os.CreateTemp(dir, "hintstream-bound-*.tape")
	if err != nil {
		return nil, fmt.Errorf("simulate: bound tape: %w", err)
	}
	return &tape{f: f, last: map[uint64]int64{}, tailCap: defaultTapeTail}, nil
}

// add appends request i's blocks.
func (t *tape) add(i int, blocks []uint64) error {
	for k, b := range blocks {
		if p, ok := t.last[b]; ok {
			if err := t.patch(p, int32(i), int32(k)); err != nil {
				return err
			}
		}
		t.last[b] = t.n
		t.tail = append(t.tail, tapeEntry{block: b, next: never})
		t.n++
	}
	if len(t.tail) >= t.tailCap {
		return t.spill(len(t.tail) - t.tailCap/2)
	}
	return nil
}

func (t *tape) patch(pos int64, next, nextK int32) error {
	if pos >= t.tailFrom {
		e := &t.tail[pos-t.tailFrom]
		e.next, e.nextK = next, nextK
		return nil
	}
	t.patched++
	binary.LittleEndian.PutUint32(t.scratch[:4], uint32(next))
	binary.LittleEndian.PutUint32(t.scratch[4:], uint32(nextK))
	if _, err := t.f.WriteAt(t.scratch[:], pos*tapeEntrySize+8); err != nil {
		return fmt.Errorf("simulate: bound tape: %w", err)
	}
	return nil
}

// spill writes the first k tail entries to the file.
func (t *tape) spill(k int) error {
	buf := make([]byte, k*tapeEntrySize)
	for j, e := range t.tail[:k] {
		binary.LittleEndian.PutUint64(buf[j*tapeEntrySize:], e.block)
		binary.LittleEndian.PutUint32(buf[j*tapeEntrySize+8:], uint32(e.next))
		binary.LittleEndian.PutUint32(buf[j*tapeEntrySize+12:], uint32(e.nextK))
	}
	if _, err := t.f.WriteAt(buf, t.tailFrom*tapeEntrySize); err != nil {
		return fmt.Errorf("simulate: bound tape: %w", err)
	}
	t.tailFrom += int64(k)
	t.tail = append(t.tail[:0], t.tail[k:]...)
	return nil
}

// rewind writes out the tail, drops the block map and returns a reader
// of the tape from its start; a tape can be rewound again, but not added
// to after.
func (t *tape) rewind() (*tapeReader, error) {
	if t.last != nil {
		if err := t.spill(len(t.tail)); err != nil {
			return nil, err
		}
		t.last, t.tail = nil, nil
	}
	return &tapeReader{r: bufio.NewReaderSize(io.NewSectionReader(t.f, 0, t.n*tapeEntrySize), 1<<16)}, nil
}

func (t *tape) close() {
	name := t.f.Name()
	t.f.Close()
	os.Remove(name)
}

type tapeReader struct {
	r   *bufio.Reader
	buf [tapeEntrySize]byte
}

// read appends the next n entries to dst.
func (r *tapeReader) read(dst []tapeEntry, n int) ([]tapeEntry, error) {
	for range n {
		if _, err := io.ReadFull(r.r, r.buf[:]); err != nil {
			return dst, fmt.Errorf("simulate: bound tape: %w", err)
		}
		dst = append(dst, tapeEntry{block: binary.LittleEndian.Uint64(r.buf[:8]),
			next: int32(binary.LittleEndian.Uint32(r.buf[8:12])), nextK: int32(binary.LittleEndian.Uint32(r.buf[12:]))})
	}
	return dst, nil
}

// clairvoyantTape is clairvoyantFlat over a rewound tape of n requests:
// blocks(i) is how many blocks request i added (asked once each, in
// order), at(i) its time; it hands each request's hits to hit, in
// order. It holds one instant's requests, the kept pages and their heap.
func clairvoyantTape(r *tapeReader, n int, blocks func(i int) (int, error), at func(i int) int64, capacity int, hit func(i, hits int) error) error {
	return clairvoyantTapeKept(r, n, blocks, at, capacity, func(i, hits int, _ []bool) error { return hit(i, hits) })
}

// clairvoyantTapeKept is clairvoyantTape that also hands hit which of
// the request's blocks were found kept (valid during the call only).
func clairvoyantTapeKept(r *tapeReader, n int, blocks func(i int) (int, error), at func(i int) int64, capacity int, hit func(i, hits int, kept []bool) error) error {
	var hits []int
	var kept1 [][]bool
	kept := map[uint64]int32{}
	h := &farthest{}
	var inst [][]tapeEntry
	for i := 0; i < n; {
		j := i + 1
		for j < n && at(j) == at(i) {
			j++
		}
		inst = inst[:0]
		for r2 := i; r2 < j; r2++ {
			nb, err := blocks(r2)
			if err != nil {
				return err
			}
			seq, err := r.read(nil, nb)
			if err != nil {
				return err
			}
			inst = append(inst, seq)
		}
		produced := map[uint64]bool{}
		hits = append(hits[:0], make([]int, len(inst))...)
		for len(kept1) < len(inst) {
			kept1 = append(kept1, nil)
		}
		for k, seq := range inst {
			kept1[k] = kept1[k][:0]
			for _, e := range seq {
				_, ok := kept[e.block]
				ok = ok || produced[e.block]
				if ok {
					hits[k]++
				}
				kept1[k] = append(kept1[k], ok)
			}
			for _, e := range seq {
				produced[e.block] = true
			}
		}
		for _, seq := range inst {
			for _, e := range seq {
				if e.next == never {
					delete(kept, e.block)
					continue
				}
				if e.next >= int32(j) {
					kept[e.block] = e.next
					heap.Push(h, item{page: e.block, next: e.next})
				}
			}
		}
		evictFarthest(kept, h, capacity)
		for k, n := range hits {
			if err := hit(i+k, n, kept1[k]); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// beladyTape is beladyHits (reachable.go) over a rewound tape of n
// requests, without mark: valuable(i, k) says whether a hit of request
// i's block k counts, and an interval ending at a worthless access is
// never kept.
func beladyTape(r *tapeReader, n int, blocks func(i int) int, at func(i int) int64, capacity int, valuable func(i, k int) bool) ([]int, error) {
	hits := make([]int, n)
	kept := map[uint64]int32{}
	h := &farthest{}
	var inst [][]tapeEntry
	for i := 0; i < n; {
		j := i + 1
		for j < n && at(j) == at(i) {
			j++
		}
		inst = inst[:0]
		for r2 := i; r2 < j; r2++ {
			seq, err := r.read(nil, blocks(r2))
			if err != nil {
				return nil, err
			}
			inst = append(inst, seq)
		}
		produced := map[uint64]bool{}
		for q, seq := range inst {
			for k, e := range seq {
				if _, ok := kept[e.block]; (ok || produced[e.block]) && valuable(i+q, k) {
					hits[i+q]++
				}
			}
			for _, e := range seq {
				produced[e.block] = true
			}
		}
		for _, seq := range inst {
			for _, e := range seq {
				if e.next < int32(j) && e.next != never {
					continue
				}
				if e.next == never || !valuable(int(e.next), int(e.nextK)) {
					delete(kept, e.block)
					continue
				}
				kept[e.block] = e.next
				heap.Push(h, item{page: e.block, next: e.next})
			}
		}
		evictFarthest(kept, h, capacity)
		i = j
	}
	return hits, nil
}

// evictFarthest drops the kept pages whose next use is farthest until
// capacity holds them. Heap entries of pages re-used or dropped since are
// skipped when popped; without a pop they would pile up with the trace,
// so the heap is rebuilt from kept once they outnumber it.
func evictFarthest(kept map[uint64]int32, h *farthest, capacity int) {
	for len(kept) > capacity {
		it := heap.Pop(h).(item)
		if nu, ok := kept[it.page]; ok && nu == it.next {
			delete(kept, it.page)
		}
	}
	if h.Len() > 2*len(kept)+1024 {
		*h = (*h)[:0]
		for b, nu := range kept {
			*h = append(*h, item{page: b, next: nu})
		}
		heap.Init(h)
	}
}
