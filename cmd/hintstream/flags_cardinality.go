package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/service"
)

// cardinalityFlags registers issue 19's run flags (holding area of
// unregistered workers, snapshot reclaim) and returns the function that
// validates them into a service.Config after parsing.
func cardinalityFlags(fs *flag.FlagSet) func(*service.Config) error {
	var (
		holdWorkers = fs.Int("holding-workers", consumers.DefaultHoldingWorkers, "KV events of at most this many unregistered worker ids are held until they register (least recently heard evicted; past it events are dropped as \"unknown worker\")")
		holdBlocks  = fs.Int("holding-blocks", consumers.DefaultHoldingBlocks, "blocks held per unregistered worker id; more are dropped as \"unknown worker\"")
		grace       = fs.Duration("snapshot-reclaim-grace", service.DefaultSnapshotReclaimGrace, "chunks of an interrupted snapshot save, idle this long, are purged after the next save and at start-up")
	)
	return func(cfg *service.Config) error {
		switch {
		case *holdWorkers < 1:
			return fmt.Errorf("--holding-workers must be at least 1, got %d", *holdWorkers)
		case *holdBlocks < 1:
			return fmt.Errorf("--holding-blocks must be at least 1, got %d", *holdBlocks)
		case *grace <= 0:
			return fmt.Errorf("--snapshot-reclaim-grace must be positive, got %v", *grace)
		}
		cfg.Holding = consumers.HoldingConfig{MaxWorkers: *holdWorkers, MaxBlocksPerWorker: *holdBlocks}
		cfg.SnapshotReclaimGrace = *grace
		return nil
	}
}
