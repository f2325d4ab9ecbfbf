package speed

import (
	"syscall"
	"time"
)

// sleepUntil blocks until t. Go's timers wake idle programs with
// millisecond resolution (the netpoller's epoll timeout), which would
// add up to 1 ms of lateness to every wake-up of a 2,000/s schedule;
// nanosleep(2) on this goroutine's thread keeps it to tens of µs.
func sleepUntil(t time.Time) {
	for {
		d := time.Until(t)
		if d <= 0 {
			return
		}
		ts := syscall.NsecToTimespec(int64(d))
		if err := syscall.Nanosleep(&ts, nil); err == nil {
			return
		}
		// EINTR: a signal; sleep the rest.
	}
}
