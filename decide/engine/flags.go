package engine

import (
	"errors"
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/decide/routing"
	"github.com/hintstream/hintstream/decide/tooltime"
	"github.com/hintstream/hintstream/kvevents/index"
)

// ErrInvalidFlag is wrapped by ApplyFlags' errors about a decision flag's
// value.
var ErrInvalidFlag = errors.New("invalid decision flag")

// maxIndexShards is index.WithShards' cap (1<<12).
const maxIndexShards = 4096

// decisionFlags holds what the decision flags parse into before ApplyFlags
// turns it into Decisions: the worker choice (validated before it is
// taken) and the index's options, which are functions, not fields.
type decisionFlags struct {
	routing      routing.Config
	maxBlocks    int64
	overlapJump  int
	excludeStale bool
	capacity     int64
	shards       int
}

// RegisterFlags registers every flag a hint decision depends on, bound to
// d and set to the defaults: the worker choice (routing.Config's flags),
// the index, the prefetch and pin TTLs (actions.TTLConfig's), tool times
// (tooltime.Config's), keep-pin, renewals, input limits (schemas.Limits')
// and the holding area. `run` and `replay` both register them, so a
// replay given a live run's flags makes that run's choices. ApplyFlags,
// once they are parsed, validates them and completes d.
//
// --index-capacity and --index-shards size the KV index (carried in
// IndexOptions, so a replay sizes its index as the live run did); neither
// changes a choice, only memory and resize pauses. --index-shards is not
// --kv-apply-shards: that one is how many goroutines apply KV events;
// this one is how many parts each 64-worker page of the index's block
// lookup is split into, each resized alone.
func (d *Decisions) RegisterFlags(fs *flag.FlagSet) {
	f := &decisionFlags{}
	d.flags = f
	f.routing.RegisterFlags(fs)
	d.PinTTL.RegisterFlags(fs)
	d.ToolTime = tooltime.DefaultConfig()
	d.ToolTime.RegisterFlags(fs)
	d.Limits.RegisterFlags(fs)
	fs.DurationVar(&d.PrefetchTTL, "prefetch-ttl", DefaultPrefetchTTL, "a prefetch expires this long after its wake-up (expires_at_ms)")
	fs.Int64Var(&f.maxBlocks, "index-max-blocks", 0, "bound on indexed (block, worker) device entries; new blocks past it are dropped and counted (0: unbounded)")
	fs.IntVar(&f.overlapJump, "overlap-jump", index.DefaultJump, "overlap probes every n-th prompt block and scans between probes only where workers were lost (Dynamo's jump search; assumes each worker's blocks are prefix-closed); 1 looks up every block")
	fs.BoolVar(&f.excludeStale, "exclude-stale", false, "leave workers with an event-id gap out of the overlap until they resynchronise (default: keep them, as the router does)")
	fs.DurationVar(&d.PinRenewMax, "pin-renew-max", DefaultPinRenewMax, "renew a tool call's pin while its session has not come back, until the call has lasted this long (0: never renew)")
	fs.BoolVar(&d.KeepPinOnNextTurn, "keep-pin-on-next-turn", false, "leave a session's pin when its next request arrives (default: release the slot)")
	fs.Int64Var(&d.PinBudgetTokens, "pin-budget-tokens", 0, "keep at most this many tokens' KV pinned at once by this member: the Mooncake store's capacity (its bytes ÷ the KV bytes of a token) ÷ the group's members; "+
		"a pin past it releases the pins whose sessions are expected back last (0: no bound; docs/retention.md)")
	fs.IntVar(&d.Holding.MaxWorkers, "holding-workers", index.DefaultHoldingWorkers, "KV events of at most this many unregistered worker ids are held until they register (least recently heard evicted; past it events are dropped as \"unknown worker\")")
	fs.IntVar(&d.Holding.MaxBlocksPerWorker, "holding-blocks", index.DefaultHoldingBlocks, "blocks held per unregistered worker id; more are dropped as \"unknown worker\"")
	fs.Int64Var(&f.capacity, "index-capacity", 0, "pre-size the KV index for this many (block, worker) device entries, about 60 bytes each at the first event, so it does no table growth (and no resize pause) while it fills to it; 0: start small and grow")
	fs.IntVar(&f.shards, "index-shards", index.DefaultShards, "parts of each 64-worker page of the KV index's block lookup, rounded up to a power of two (at most 4096); each part resizes alone, so more parts make each resize's writer pause shorter (not --kv-apply-shards, the apply goroutines)")
}

// ApplyFlags validates what RegisterFlags' flags parsed and completes d:
// the worker choice, the index options, and the command line's 0 for
// --pin-renew-max (never) as NoPinRenewal. Errors about one flag's value
// wrap ErrInvalidFlag; the rest are Validate's. It acts once: a second
// call, or a call without RegisterFlags, does nothing.
func (d *Decisions) ApplyFlags() error {
	f := d.flags
	if f == nil {
		return nil
	}
	d.flags = nil
	if err := f.routing.Validate(); err != nil {
		return err
	}
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidFlag, fmt.Sprintf(format, a...))
	}
	switch {
	case d.PrefetchTTL <= 0:
		return invalid("--prefetch-ttl must be positive, got %v", d.PrefetchTTL)
	case f.overlapJump < 1:
		return invalid("--overlap-jump must be at least 1, got %d", f.overlapJump)
	case d.PinRenewMax < 0:
		return invalid("--pin-renew-max must not be negative, got %v", d.PinRenewMax)
	case d.PinBudgetTokens < 0:
		return invalid("--pin-budget-tokens must not be negative, got %d", d.PinBudgetTokens)
	case d.Holding.MaxWorkers < 1:
		return invalid("--holding-workers must be at least 1, got %d", d.Holding.MaxWorkers)
	case d.Holding.MaxBlocksPerWorker < 1:
		return invalid("--holding-blocks must be at least 1, got %d", d.Holding.MaxBlocksPerWorker)
	}
	choice := f.routing
	d.Routing = &choice
	d.IndexOptions = []index.Option{index.WithMaxBlocks(f.maxBlocks), index.WithExcludeStale(f.excludeStale), index.WithJump(f.overlapJump)}
	d.NoPinRenewal = d.PinRenewMax == 0 // 0 means "never" on the command line
	switch {
	case f.capacity < 0:
		return invalid("--index-capacity must not be negative, got %d", f.capacity)
	case f.shards < 1 || f.shards > maxIndexShards:
		return invalid("--index-shards must be 1..%d, got %d", maxIndexShards, f.shards)
	}
	d.IndexOptions = append(d.IndexOptions, index.WithCapacity(f.capacity), index.WithShards(f.shards))
	return d.Validate()
}
