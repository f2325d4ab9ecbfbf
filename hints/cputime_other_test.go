//go:build !unix

package hints

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
