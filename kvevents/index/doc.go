// Package index is the per-worker index of cached prompt blocks: its
// tables, storage tiers, event-order tracking and snapshots, behind the
// Index interface that KV ingestion applies Events to. Memory is the
// index itself; Holding is a decorator in front of one that lets only
// registered workers' events through and holds the others' until their
// worker registers.
//
// The split follows llm-d's kv-cache (pkg/kvcache/kvblock/index.go): the
// index is an interface of its own, apart from the adapters that decode
// engine events (package kvevents), so a decorator wraps it without the
// decoders knowing.
package index
