package adapter

import (
	"errors"
	"fmt"
)

// Prefetch targets (Config.PrefetchTarget): what a kv.prefetch becomes.
// Retains always go to the engine (Config.Engine), whatever the target.
const (
	// TargetEngine is a one-token warm-up on the engine's own HTTP API
	// (engine.go): the adapter runs beside an engine that serves one.
	TargetEngine = "engine"
	// TargetDynamo is a one-token warm-up through the Dynamo frontend,
	// routed to the hint's worker by Dynamo's routing headers (dynamo.go):
	// for engines that run as Dynamo workers, with no HTTP server of
	// their own.
	TargetDynamo = "dynamo"
	// TargetLMCache is LMCache's POST /l2/prefetch (lmcache_prefetch.go):
	// LMCache loads the prompt's chunks from its L2 (disk, remote) into
	// its CPU tier, where the engine's connector finds them at the turn.
	TargetLMCache = "lmcache"
)

// DefaultPrefetchTarget keeps a prefetch what it was before targets
// existed: a warm-up on the engine beside the adapter.
const DefaultPrefetchTarget = TargetEngine

// prefetchTargets lists the targets in the order --help names them.
var prefetchTargets = []string{TargetEngine, TargetDynamo, TargetLMCache}

// errNoTokens: a prefetch that names its prompt only by block hashes
// (a Dynamo-sourced prompt known by its sequence hashes). Every target
// here takes tokens or a chat request; none loads by hash.
var errNoTokens = errors.New("adapter: prefetch without token ids or a chat request: no target loads a prompt by block hash")

// prefetchCall is the request a prefetch becomes at the configured
// target.
func (a *Adapter) prefetchCall(w warmUp) (call, error) {
	if len(w.tokens) == 0 && len(w.body) == 0 {
		return call{}, errNoTokens
	}
	switch a.cfg.PrefetchTarget {
	case TargetEngine:
		return buildCall(a.cfg.Engine, a.base, w, a.cfg.EnginePriority)
	case TargetDynamo:
		return dynamoCall(a.frontend, w)
	case TargetLMCache:
		return lmcacheCall(a.lmcache, a.cfg.LMCacheWorldSize, w)
	}
	return call{}, fmt.Errorf("%w: prefetch target %q", ErrInvalidOption, a.cfg.PrefetchTarget)
}

// prefetchNeedsModel reports whether the prefetch target needs a model
// name: vLLM's completions, the Dynamo frontend (it serves models by
// name) and LMCache (its layouts are registered per model_name).
func (c *Config) prefetchNeedsModel() bool {
	return c.PrefetchTarget != TargetEngine || c.Engine == EngineVLLM
}
