package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/engine"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/tooltime"
)

// decisionFlags registers every flag a hint decision depends on: the
// worker choice (routing.Config's flags), the index, the prefetch and pin
// TTLs (actions.TTLConfig's), tool times (tooltime.Config's), keep-pin,
// renewals, input limits (schemas.Limits') and the holding area. `run`
// and `replay` both call it, so a replay given a live run's flags makes
// that run's choices. The returned func validates the parsed values and
// sets them on an engine.Decisions; the command line's 0 for
// --pin-renew-max (never) becomes the Decisions' NoPinRenewal.
func decisionFlags(fs *flag.FlagSet) func(*engine.Decisions) error {
	var (
		rc   routing.Config
		pin  actions.TTLConfig
		tool = tooltime.DefaultConfig()
		lim  schemas.Limits
	)
	rc.RegisterFlags(fs)
	pin.RegisterFlags(fs)
	tool.RegisterFlags(fs)
	lim.RegisterFlags(fs)
	var (
		ttl          = fs.Duration("prefetch-ttl", engine.DefaultPrefetchTTL, "a prefetch expires this long after its wake-up (expires_at_ms)")
		maxBlocks    = fs.Int64("index-max-blocks", 0, "bound on indexed (block, worker) device entries; new blocks past it are dropped and counted (0: unbounded)")
		overlapJump  = fs.Int("overlap-jump", kvevents.DefaultJump, "overlap probes every n-th prompt block and scans between probes only where workers were lost (Dynamo's jump search; assumes each worker's blocks are prefix-closed); 1 looks up every block")
		excludeStale = fs.Bool("exclude-stale", false, "leave workers with an event-id gap out of the overlap until they resynchronise (default: keep them, as the router does)")
		pinRenewMax  = fs.Duration("pin-renew-max", engine.DefaultPinRenewMax, "renew a tool call's pin while its session has not come back, until the call has lasted this long (0: never renew)")
		keepPin      = fs.Bool("keep-pin-on-next-turn", false, "leave a session's pin when its next request arrives (default: release the slot)")
		holdWorkers  = fs.Int("holding-workers", engine.DefaultHoldingWorkers, "KV events of at most this many unregistered worker ids are held until they register (least recently heard evicted; past it events are dropped as \"unknown worker\")")
		holdBlocks   = fs.Int("holding-blocks", engine.DefaultHoldingBlocks, "blocks held per unregistered worker id; more are dropped as \"unknown worker\"")
	)
	applyIndex := indexFlags(fs) // --index-capacity, --index-shards (flags_index.go)
	return func(d *engine.Decisions) error {
		if err := rc.Validate(); err != nil {
			return err
		}
		switch {
		case *overlapJump < 1:
			return fmt.Errorf("--overlap-jump must be at least 1, got %d", *overlapJump)
		case *pinRenewMax < 0:
			return fmt.Errorf("--pin-renew-max must not be negative, got %v", *pinRenewMax)
		case *holdWorkers < 1:
			return fmt.Errorf("--holding-workers must be at least 1, got %d", *holdWorkers)
		case *holdBlocks < 1:
			return fmt.Errorf("--holding-blocks must be at least 1, got %d", *holdBlocks)
		}
		choice := rc
		d.Routing = &choice
		d.IndexOptions = []kvevents.IndexOption{kvevents.WithMaxBlocks(*maxBlocks), kvevents.WithExcludeStale(*excludeStale), kvevents.WithJump(*overlapJump)}
		d.PrefetchTTL = *ttl
		d.PinTTL = pin
		d.ToolTime = tool
		d.KeepPinOnNextTurn, d.PinRenewMax = *keepPin, *pinRenewMax
		d.NoPinRenewal = *pinRenewMax == 0 // 0 means "never" on the command line
		d.Limits = lim
		d.Holding = engine.HoldingConfig{MaxWorkers: *holdWorkers, MaxBlocksPerWorker: *holdBlocks}
		if err := applyIndex(d); err != nil {
			return err
		}
		return d.Validate()
	}
}
