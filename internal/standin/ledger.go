package standin

import (
	"slices"
	"sync"
)

// ledger records what a Go stand-in accepted and refused, for its
// handlers' goroutines and the test reading it.
type ledger[T any] struct {
	mu       sync.Mutex
	accepted []T
	rejected []Rejected
}

// Accepted returns the requests accepted so far.
func (l *ledger[T]) Accepted() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.accepted)
}

// Rejected returns the requests refused so far.
func (l *ledger[T]) Rejected() []Rejected {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.rejected)
}

// accept records v and returns how many were accepted, v included.
func (l *ledger[T]) accept(v T) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.accepted = append(l.accepted, v)
	return len(l.accepted)
}

func (l *ledger[T]) reject(status int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rejected = append(l.rejected, Rejected{Status: status, Error: err.Error()})
}
