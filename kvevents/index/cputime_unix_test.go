//go:build unix

package index

import (
	"syscall"
	"time"
)

// processCPU is the CPU time the process has used so far (all threads,
// user and system), for benchmarks whose wall time the other jobs of a
// shared machine inflate; ok is false where it cannot be read.
func processCPU() (d time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
