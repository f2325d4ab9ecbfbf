package actions

import "errors"

// DropReason names why a Sender refused a hint, as the hints.*.dropped
// counters label it: queue_full, expired, closed, budget, or error for
// anything else.
func DropReason(err error) string {
	switch {
	case errors.Is(err, ErrQueueFull):
		return "queue_full"
	case errors.Is(err, ErrExpired):
		return "expired"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, ErrBudget):
		return "budget"
	}
	return "error"
}
