//go:build race

package routing

// raceBuild: the race detector slows the Index ~10x; the parity test
// then runs fewer cases (it still runs every code path).
const raceBuild = true
