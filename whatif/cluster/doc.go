// Package sim is the simulated cluster of hintstream's hint-value test
// (loadtest/value) and of `hintstream whatif` (package whatif):
// N workers, each with a device KV cache, a real ZMQ PULL hint socket,
// the KV events and load reports a real engine would publish, and a
// registry record; a shared L3 store standing in for Mooncake, with a
// real ZMQ PULL pin socket; and a router model that routes each real
// request with hintstream's own routing package.
//
// Decisions, and why:
//
//   - Block size. Workers report kv_block_size 512, the block size of a
//     Mooncake trace's hash_ids, so one trace block is one device block
//     and one L3 page (the object layout's page_size is 512 too, with one
//     object per page under a key prefix shared by all workers). Blocks
//     are named by Dynamo's sequence hash (kvevents.PromptHashes) on
//     device and by SGLang's Mooncake key (actions.ObjectKeys) in L3,
//     both computed from the tokens, exactly as hintstream computes them.
//   - Device cache: LRU over blocks (DeviceCache), a prompt touched
//     last-block-first so that eviction takes leaves before prefixes and
//     what a worker holds of a prompt is always a prefix, as in vLLM and
//     SGLang.
//   - Serving a request: the leading blocks on the chosen worker's device
//     are device hits; the L3-resident pages that follow in a row are
//     loaded; the rest, and the trailing partial block, is recomputed.
//     Then every full block is stored on the device (KV events published)
//     and written through to L3.
//   - A prefetch (kv.prefetch) loads, into the worker's device, the pages
//     of its prompt that L3 holds right after what the device holds, and
//     publishes the KV events of what it stored. Prefetching costs no
//     prefill: it happens in the wake-up's lead time.
//   - L3 (L3Store): LRU over pages with Mooncake's soft pins (kv.pin):
//     eviction skips pages under a live pin; only when every page is
//     pinned does a pinned one go (counted as a broken pin). TTLs run on
//     the simulated clock; a pin with TTL 0 releases its slot; a newer pin
//     of a slot replaces it.
//   - Load: a request is active from its arrival to its response, and
//     prefilling for its prompt's prefill time; active_decode_blocks sums
//     the blocks of active requests, active_prefill_tokens the uncached
//     tokens of those still prefilling (Dynamo's ActiveLoad). There is no
//     queueing: times come from the workload, so every run being compared
//     sees the same timeline.
//   - Router model (Router): routing.Selector with the default config (the
//     cost function of Dynamo's KV router that hintstream implements) over
//     the exact device caches and loads, not over an index built from
//     events. A prefetch is accurate when this router, at the request,
//     picks the worker hintstream picked from the bus at the wake-up.
//
// Everything but Endpoints and JetStreamSink is single-threaded and runs
// on the simulated clock (Cluster.Advance); the sockets' goroutines only
// decode and queue what arrives.
package cluster
