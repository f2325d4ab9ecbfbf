// Package adapter is the worker-side sidecar of `hintstream adapter`: it
// binds a hint socket (a ZeroMQ PULL, where the workers' registry records
// point), decodes each KvHintsEnvelope with package receiver, and carries
// out kv.prefetch@1.0 and hintstream.retain@1.0 through APIs that exist upstream.
//
// A prefetch becomes, by Config.PrefetchTarget (targets.go):
//   - TargetEngine: a one-token request for the hint's tokens on the
//     engine's own HTTP API (engine.go): SGLang's native /generate with
//     input_ids and max_new_tokens 1; vLLM's /v1/completions with the
//     token ids as the prompt, max_tokens 1, and a kv_hints envelope
//     holding one vllm.set_priority action, so the warmed blocks outlive
//     plain LRU until the turn comes;
//   - TargetDynamo: a one-token /v1/completions through the Dynamo
//     frontend, routed to the hint's worker and DP rank by Dynamo's own
//     routing headers (dynamo.go), or the conversation's chat request cut
//     to one token (SubmitPrefetch);
//   - TargetLMCache: LMCache's POST /l2/prefetch of the hint's tokens
//     (lmcache_prefetch.go), loading them from its L2 into its CPU tier.
//
// A retain is a vLLM warm-up with a set_priority claim. Each file cites
// the upstream source of every field sent; every call, whatever its
// target, goes through one HTTP client path (post) with the same bounds.
//
// The socket is never blocked: a hint is queued for a bounded pool of
// MaxInflight callers, or dropped and counted when the queue is full. A
// hint is never acted on, nor a call retried, past its expires_at_ms.
package adapter
