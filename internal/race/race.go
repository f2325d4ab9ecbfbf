//go:build !race

// Package race says whether the race detector is on, so that a
// simulation-heavy test plays a small case under -race (make test's race
// pass) and its full case without it (make test's sim pass), and so that
// test deadlines stretch further under it (natstest.Within).
package race

// Enabled is true in a build with -race.
const Enabled = false
