//go:build unix

package zmqsend

import (
	"fmt"
	"syscall"
)

// EnsureFileLimit raises the process's RLIMIT_NOFILE soft limit to need
// (FilesFor the socket budget) when it is lower, up to the hard limit, and
// raises the hard limit too when the process may (root). It returns the
// limit in effect, or an error wrapping ErrFileLimit that says what to
// change when need cannot be had: a budget the process cannot open fails
// at start-up, not as "too many open files" on the thousandth worker.
func EnsureFileLimit(need uint64) (uint64, error) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0, fmt.Errorf("%w: read RLIMIT_NOFILE: %v", ErrFileLimit, err)
	}
	if lim.Cur >= need {
		return lim.Cur, nil
	}
	want := lim
	want.Cur = need
	if want.Max < need {
		want.Max = need // only a privileged process may
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
		return lim.Cur, fmt.Errorf("%w: %d needed, RLIMIT_NOFILE is %d (hard limit %d) and cannot be raised (%v): raise the hard limit (ulimit -Hn, LimitNOFILE= in systemd, a container's nofile ulimit) or lower --max-endpoints",
			ErrFileLimit, need, lim.Cur, lim.Max, err)
	}
	return need, nil
}
