package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/engine"
	"github.com/hintstream/hintstream/kvevents/index"
)

// maxIndexShards is index.WithShards' cap (1<<12).
const maxIndexShards = 4096

// indexFlags registers the KV index's sizing flags (before them
// index.WithCapacity and WithShards had only tests as callers). They
// are decision flags (decisionFlags calls this), carried in
// engine.Decisions.IndexOptions, so a replay sizes its index as the live
// run did; neither changes a choice, only memory and resize pauses.
//
// --index-shards is not --kv-apply-shards: that one is how many
// goroutines apply KV events (per worker subject, consumers.StateConfig);
// this one is how many parts each 64-worker page of the index's block
// lookup is split into, each resized alone.
func indexFlags(fs *flag.FlagSet) func(*engine.Decisions) error {
	var (
		capacity = fs.Int64("index-capacity", 0, "pre-size the KV index for this many (block, worker) device entries, about 60 bytes each at the first event, so it does no table growth (and no resize pause) while it fills to it; 0: start small and grow")
		shards   = fs.Int("index-shards", index.DefaultShards, "parts of each 64-worker page of the KV index's block lookup, rounded up to a power of two (at most 4096); each part resizes alone, so more parts make each resize's writer pause shorter (not --kv-apply-shards, the apply goroutines)")
	)
	return func(d *engine.Decisions) error {
		switch {
		case *capacity < 0:
			return fmt.Errorf("--index-capacity must not be negative, got %d", *capacity)
		case *shards < 1 || *shards > maxIndexShards:
			return fmt.Errorf("--index-shards must be 1..%d, got %d", maxIndexShards, *shards)
		}
		d.IndexOptions = append(d.IndexOptions, index.WithCapacity(*capacity), index.WithShards(*shards))
		return nil
	}
}
