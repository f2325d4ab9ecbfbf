package schemas

// DefaultKVBytesPerToken is the KV cache one token takes when the
// operator does not say (--kv-bytes-per-token): Qwen3-8B in bf16, 36
// layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes, the model the
// demo and the examples serve (Qwen/Qwen3-8B). Load times (bytes at the
// L3 bandwidth) count with it, and whatif models the same load times, so the advisor and the service
// it advises agree. (131,072, which whatif once used, is a 32-layer 8B
// model's: Llama-3-8B, not the model served here.)
const DefaultKVBytesPerToken = 147456

// DefaultL3Bandwidth is the rate KV loads from the shared store (L3,
// Mooncake) into a worker's device when the operator does not say
// (--l3-bandwidth), bytes/s: 10 GB/s, a 100 Gb/s RDMA link less overhead.
// whatif plays loads at the same rate (25 GB/s, which it once used,
// cited no link).
const DefaultL3Bandwidth = 10e9
