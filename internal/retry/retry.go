// Package retry holds what hintstream's retry loops share: a jittered
// exponential backoff (github.com/cenkalti/backoff) and a wait that ends
// with a context.
package retry

import (
	"context"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Doubling returns a backoff whose waits start at first and double up to
// most, each drawn at random within ±50% of that (backoff's default
// randomization factor), so that instances that failed together do not
// retry together. It never stops by itself: the loop is bounded by its
// context or its own deadline.
func Doubling(first, most time.Duration) *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(first),
		backoff.WithMaxInterval(most),
		backoff.WithMultiplier(2),
		backoff.WithMaxElapsedTime(0))
}

// Wait waits d, or until ctx is done: it reports whether d passed first.
func Wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
