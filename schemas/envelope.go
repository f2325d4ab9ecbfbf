package schemas

import "github.com/tinylib/msgp/msgp"

//msgp:limit arrays:4194304 maps:4096

// ProtocolVersion is the KvHintsEnvelope protocol version hintstream speaks.
const ProtocolVersion = "0.1"

// KvHintsEnvelope is the msgpack map a worker scheduler or the Mooncake
// master decodes (with msgspec) from its PULL socket. Field order matches
// the reference encoder so equal content gives equal bytes.
type KvHintsEnvelope struct {
	ProtocolVersion string         `msg:"protocol_version" json:"protocol_version"`
	MessageID       string         `msg:"message_id" json:"message_id"`
	Actions         []KvHintAction `msg:"actions" json:"actions"`
}

// KvHintAction is one typed action. Payload holds an already encoded
// msgpack map (for example a PrefetchPayload), so the envelope codec stays
// independent of the action types it carries.
type KvHintAction struct {
	ActionID      string   `msg:"action_id" json:"action_id"`
	ActionType    string   `msg:"action_type" json:"action_type"`
	ActionVersion string   `msg:"action_version" json:"action_version"`
	Payload       msgp.Raw `msg:"payload" json:"payload"`
}

// PrefetchPayload is the payload of kv.prefetch@1.0: load the KV of
// TokenIDs from the shared store into the worker's device cache, unless the
// hint arrives after ExpiresAtMs (Unix milliseconds).
type PrefetchPayload struct {
	RequestID   string   `msg:"request_id" json:"request_id"`
	SessionID   string   `msg:"session_id" json:"session_id"`
	Model       string   `msg:"model" json:"model"`
	TokenIDs    []uint32 `msg:"token_ids" json:"token_ids"`
	DpRank      uint32   `msg:"dp_rank" json:"dp_rank"`
	ExpiresAtMs int64    `msg:"expires_at_ms" json:"expires_at_ms"`
	// WorkerID is the worker the hint is for: a receiver bound to another
	// worker (two records listing one endpoint, a reused address) drops it.
	WorkerID uint64 `msg:"worker_id" json:"worker_id"`
	// CacheSalt is the request's cache namespace (its cache_salt): the
	// engines and LMCache key a salted prompt's KV by it, so a warm-up or
	// store prefetch without it would load another tenant's (or no) KV.
	// Omitted when empty, so an unsalted prefetch encodes as before.
	CacheSalt string `msg:"cache_salt,omitempty" json:"cache_salt,omitempty"`
	// SequenceHashes and SequenceBlockSize name a prompt known without
	// its token ids (TokenIDs empty) by Dynamo's sequence hashes;
	// BlockHashes are the engine's own hashes of those blocks, as the
	// workers' KV events reported them (the worker loads the pages it
	// stores under those hashes). Absent for a prompt known by tokens.
	SequenceHashes    []uint64 `msg:"sequence_hashes,omitempty" json:"sequence_hashes,omitempty"`
	SequenceBlockSize uint32   `msg:"sequence_block_size,omitempty" json:"sequence_block_size,omitempty"`
	BlockHashes       []uint64 `msg:"block_hashes,omitempty" json:"block_hashes,omitempty"`
}

// PinPayload is the payload of kv.pin@1.0: keep the Mooncake objects Keys
// resident (soft pin) for TTLMs milliseconds at Priority (1..100), because
// a miss would recompute Tokens tokens. Slot names the pin so a later one
// replaces it; TTLMs 0 releases the slot (Keys may then be empty).
// Revision orders the pins, renewals and releases of one Slot across
// every member of a group: a receiver applies a message only when its
// Revision is above the slot's last (docs/wire.md); 0 (absent) is a
// sender that does not order, applied as before.
type PinPayload struct {
	Slot     string   `msg:"slot" json:"slot"`
	Keys     []string `msg:"keys" json:"keys"`
	TTLMs    int64    `msg:"ttl_ms" json:"ttl_ms"`
	Priority int64    `msg:"priority" json:"priority"`
	Tokens   int64    `msg:"tokens" json:"tokens"`
	Revision uint64   `msg:"revision,omitempty" json:"revision,omitempty"`
	// BlockHashes name the pages by the engine's own block hashes, as
	// WorkerID's KV events reported them, for a prompt known only by its
	// sequence hashes (no token ids to derive Keys from): Keys is then
	// empty. For SGLang HiCache each is the first 16 hex digits of the
	// page hash that the page's object keys carry (docs/wire.md).
	BlockHashes []uint64 `msg:"block_hashes,omitempty" json:"block_hashes,omitempty"`
	WorkerID    uint64   `msg:"worker_id,omitempty" json:"worker_id,omitempty"`
}
