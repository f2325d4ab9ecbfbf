//go:build race

package service

// floodIDs is the flood of TestKVEventFloodOfUnregisteredWorkers: under
// the race detector, where each event costs ten times as much, still past
// the index's 65,536-pair cap the flood used to fill.
const floodIDs = 70_000
