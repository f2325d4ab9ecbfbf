//go:build !race

package service

// floodIDs is the flood of TestKVEventFloodOfUnregisteredWorkers: the
// issue's 100,000 worker ids.
const floodIDs = 100_000
