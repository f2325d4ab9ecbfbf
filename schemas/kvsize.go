package schemas

// DefaultKVBytesPerToken is the KV cache one token takes when the
// operator does not say (--kv-bytes-per-token): Qwen3-8B in bf16, 36
// layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes. Load times
// (bytes at the L3 bandwidth) and the retention planner's byte budget
// both count with it.
const DefaultKVBytesPerToken = 147456

// DefaultL3Bandwidth is the rate KV loads from the shared store (L3,
// Mooncake) into a worker's device when the operator does not say
// (--l3-bandwidth), bytes/s: 10 GB/s, a 100 Gb/s RDMA link less overhead.
const DefaultL3Bandwidth = 10e9
