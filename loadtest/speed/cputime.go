package speed

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTime is the user+system CPU time process pid has used so far, read
// from /proc (Linux; 0 elsewhere or on error). CPU time per unit of work
// is the figure the shared CPUs cannot distort: a busy neighbour delays
// a program but does not make it burn more cycles.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces), from field 3.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const clkTck = 100 // USER_HZ, fixed at 100 on Linux for /proc
	return time.Duration(utime+stime) * time.Second / clkTck
}
