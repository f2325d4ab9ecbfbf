package schemas

// DefaultKVBytesPerToken is the KV cache one token takes when the
// operator does not say (--kv-bytes-per-token): Qwen3-8B in bf16, 36
// layers x 8 KV heads x 128 dims x 2 (K and V) x 2 bytes. Load times
// (bytes at the L3 bandwidth) and the retention planner's byte budget
// both count with it.
const DefaultKVBytesPerToken = 147456
