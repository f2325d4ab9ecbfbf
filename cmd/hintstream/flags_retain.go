package main

import (
	"flag"

	"github.com/hintstream/hintstream/engine"
)

// retainFlags registers run's --retain-on-worker: at each tool-call pin,
// also send the serving worker a kv.retain@1.0 (for `hintstream adapter`
// beside it; the only tool-call hint when no --pin-endpoint is set).
func retainFlags(fs *flag.FlagSet) func(*engine.Decisions) {
	on := fs.Bool("retain-on-worker", false, "at each tool call, also send the serving worker's hint socket a kv.retain of the turn's tokens "+
		"(TTL and priority as the pin's), for `hintstream adapter` to keep them in the engine's cache; works without --pin-endpoint")
	return func(d *engine.Decisions) { d.RetainOnWorker = *on }
}
