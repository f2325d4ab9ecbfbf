package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/engine"
	"github.com/hintstream/hintstream/kvevents/index"
	"github.com/hintstream/hintstream/routing"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/tooltime"
)

// decisionFlags registers every flag a hint decision depends on (issue
// 12): the worker choice (with routerFlags), the index, the prefetch and
// pin TTLs, tool times, keep-pin, renewals, input limits and the holding
// area. `run` and `replay` both call it, so a replay given a live run's
// flags makes that run's choices. The returned func validates the parsed
// values and sets them on a engine.Decisions; the command line's 0 for
// --pin-renew-max (never) becomes the Decisions' NoPinRenewal.
func decisionFlags(fs *flag.FlagSet) func(*engine.Decisions) error {
	ttlDef, toolDef := actions.DefaultTTLConfig(), tooltime.DefaultConfig()
	var (
		ttl          = fs.Duration("prefetch-ttl", engine.DefaultPrefetchTTL, "a prefetch expires this long after its wake-up (expires_at_ms)")
		weight       = fs.Float64("overlap-score-weight", routing.DefaultOverlapScoreWeight, "weight of prefill cost in the worker choice with --router-cost classic, as older Dynamo's --kv-overlap-score-weight")
		temperature  = fs.Float64("router-temperature", routing.DefaultTemperature, "softmax temperature of the worker choice, as Dynamo's --router-temperature (0: lowest cost)")
		spread       = fs.Bool("spread-wakeups", false, "burst spreading: each wake-up adds decaying virtual load to its chosen worker (departs from the router on purpose)")
		spreadHL     = fs.Duration("spread-half-life", routing.DefaultSpreadHalfLife, "half-life of burst spreading's virtual load")
		maxBlocks    = fs.Int64("index-max-blocks", 0, "bound on indexed (block, worker) device entries; new blocks past it are dropped and counted (0: unbounded)")
		overlapJump  = fs.Int("overlap-jump", index.DefaultJump, "overlap probes every n-th prompt block and scans between probes only where workers were lost (Dynamo's jump search; assumes each worker's blocks are prefix-closed); 1 looks up every block")
		excludeStale = fs.Bool("exclude-stale", false, "leave workers with an event-id gap out of the overlap until they resynchronise (default: keep them, as the router does)")
		pinHeadroom  = fs.Float64("pin-headroom", ttlDef.Headroom, "pin TTL = expected tool time × this + --pin-slack")
		pinSlack     = fs.Duration("pin-slack", ttlDef.Slack, "added to every pin TTL")
		pinMin       = fs.Duration("pin-min-ttl", ttlDef.Min, "shortest pin TTL")
		pinMax       = fs.Duration("pin-max-ttl", ttlDef.Max, "longest pin TTL (Mooncake's soft-pin maximum is 24h)")
		toolDefault  = fs.Duration("tool-time-default", toolDef.Default, "expected tool time until enough have been observed")
		toolPct      = fs.Float64("tool-time-percentile", toolDef.Percentile, "percentile of observed tool times used as the expected one")
		toolMin      = fs.Int("tool-time-min-samples", toolDef.MinSamples, "observations of a tool needed before its own percentile is used")
		pinRenewMax  = fs.Duration("pin-renew-max", engine.DefaultPinRenewMax, "renew a tool call's pin while its session has not come back, until the call has lasted this long (0: never renew)")
		keepPin      = fs.Bool("keep-pin-on-next-turn", false, "leave a session's pin when its next request arrives (default: release the slot)")
		maxTokens    = fs.Int("max-tokens", 1<<20, "largest token_ids accepted in an event")
		maxBytes     = fs.Int("max-message-bytes", 16<<20, "largest event accepted, in bytes (larger ones are dead-lettered)")
		maxHeaders   = fs.Int("max-headers", 256, "most entries in a request's headers map, and most NATS header values on any event")
		maxString    = fs.Int("max-string", 64<<10, "longest id, model, header or tool name accepted, in bytes")
		maxDepth     = fs.Int("max-depth", 32, "deepest JSON or msgpack nesting accepted in an event")
		maxHdrBytes  = fs.Int("max-header-bytes", 16<<10, "most bytes of NATS headers accepted on one event")
		holdWorkers  = fs.Int("holding-workers", index.DefaultHoldingWorkers, "KV events of at most this many unregistered worker ids are held until they register (least recently heard evicted; past it events are dropped as \"unknown worker\")")
		holdBlocks   = fs.Int("holding-blocks", index.DefaultHoldingBlocks, "blocks held per unregistered worker id; more are dropped as \"unknown worker\"")
	)
	routerCost := routerFlags(fs)
	applyIndex := indexFlags(fs) // --index-capacity, --index-shards (flags_index.go)
	return func(d *engine.Decisions) error {
		rc := routing.Config{OverlapScoreWeight: *weight, Temperature: *temperature,
			Spread: routing.SpreadConfig{Enabled: *spread, HalfLife: *spreadHL}}
		if err := routerCost(&rc); err != nil {
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
		d.Routing = &rc
		d.IndexOptions = []index.Option{index.WithMaxBlocks(*maxBlocks), index.WithExcludeStale(*excludeStale), index.WithJump(*overlapJump)}
		d.PrefetchTTL = *ttl
		d.PinTTL = actions.TTLConfig{Headroom: *pinHeadroom, Slack: *pinSlack, Min: *pinMin, Max: *pinMax}
		d.ToolTime = toolDef
		d.ToolTime.Default, d.ToolTime.Percentile, d.ToolTime.MinSamples = *toolDefault, *toolPct, *toolMin
		d.KeepPinOnNextTurn, d.PinRenewMax = *keepPin, *pinRenewMax
		d.NoPinRenewal = *pinRenewMax == 0 // 0 means "never" on the command line
		d.Limits = schemas.Limits{MaxBytes: *maxBytes, MaxTokens: *maxTokens, MaxHeaders: *maxHeaders,
			MaxString: *maxString, MaxDepth: *maxDepth, MaxHeaderBytes: *maxHdrBytes}
		d.Holding = index.HoldingConfig{MaxWorkers: *holdWorkers, MaxBlocksPerWorker: *holdBlocks}
		if err := applyIndex(d); err != nil {
			return err
		}
		return d.Validate()
	}
}
