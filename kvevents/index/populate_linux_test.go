//go:build linux

package index

import (
	"syscall"
	"testing"
	"unsafe"
)

// resident counts the resident pages among the whole pages of the n
// bytes at p (mincore).
func resident(t *testing.T, p unsafe.Pointer, n uintptr) (res, pages int) {
	t.Helper()
	const page = 4096
	start := (uintptr(p) + page - 1) &^ (page - 1)
	end := (uintptr(p) + n) &^ (page - 1)
	vec := make([]byte, (end-start)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, v := range vec {
		res += int(v & 1)
	}
	return res, len(vec)
}

// TestNewEntriesArePopulated: a table big enough for populate has every
// page resident before anything writes it, so its first stores take no
// page faults.
func TestNewEntriesArePopulated(t *testing.T) {
	for _, n := range []int{populateMin / 16, 1 << 16, 1<<18 + 7} {
		s := newEntries[bitEntry](n)
		res, pages := resident(t, unsafe.Pointer(&s[0]), uintptr(n)*16)
		if res != pages {
			t.Errorf("%d entries: %d of %d pages resident", n, res, pages)
		}
		e := newEntries[extEntry](n)
		if res, pages := resident(t, unsafe.Pointer(&e[0]), uintptr(n)*16); res != pages {
			t.Errorf("%d ext entries: %d of %d pages resident", n, res, pages)
		}
		for i := range s {
			if s[i] != (bitEntry{}) || e[i] != (extEntry{}) {
				t.Fatalf("entry %d not zero", i)
			}
		}
	}
}
