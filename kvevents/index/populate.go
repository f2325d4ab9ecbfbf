package index

import "unsafe"

// populateMin is the smallest table worth a populate call: below it, the
// few faults cost less than the system call.
const populateMin = 64 << 10

// newEntries allocates a table of n entries and has its pages faulted in
// at once (populate).
func newEntries[E bitEntry | extEntry](n int) []E {
	s := make([]E, n)
	if n > 0 {
		populate(unsafe.Pointer(&s[0]), uintptr(n)*unsafe.Sizeof(s[0]))
	}
	return s
}
