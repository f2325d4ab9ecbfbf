// Package adapter is the worker-side sidecar of `hintstream adapter`: it
// binds a worker's hint socket (a ZeroMQ PULL, where the worker's registry
// record points), decodes each KvHintsEnvelope with package receiver, and
// carries out kv.prefetch@1.0 and hintstream.retain@1.0 through the HTTP API an
// unmodified engine already has: a one-token request for the hint's
// tokens, so the engine loads (or computes) the prefix into its prefix
// cache before the turn arrives.
//
// SGLang gets its native /generate with input_ids and max_new_tokens 1;
// vLLM gets /v1/completions with the token ids as the prompt, max_tokens
// 1, and a kv_hints envelope holding one vllm.set_priority action, so the
// warmed blocks outlive plain LRU until the turn comes. engine.go cites
// the upstream source of every field sent.
//
// The socket is never blocked: a hint is queued for a bounded pool of
// MaxInflight callers, or dropped and counted when the queue is full. A
// hint is never acted on, nor an engine call retried, past its
// expires_at_ms.
package adapter
