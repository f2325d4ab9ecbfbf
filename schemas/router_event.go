package schemas

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// StorageTier names where a block lives, as Dynamo's StorageTier
// serialises it. Each tier counts toward the prefix overlap with its own
// weight (see routing); a value none of these is kept as read, and the
// index counts and ignores its events.
type StorageTier string

// Dynamo's storage tiers; an absent storage_tier means TierDevice.
const (
	TierDevice     StorageTier = "device"
	TierHostPinned StorageTier = "host_pinned"
	TierDisk       StorageTier = "disk"
	TierExternal   StorageTier = "external"
)

// Valid reports whether t is one of Dynamo's tiers.
func (t StorageTier) Valid() bool {
	switch t {
	case TierDevice, TierHostPinned, TierDisk, TierExternal:
		return true
	}
	return false
}

// RouterEvent is Dynamo's RouterEvent as its durable KV-event path
// publishes it to JetStream (JSON). Unknown fields are ignored, as serde
// does by default.
type RouterEvent struct {
	WorkerID    uint64       `json:"worker_id"`
	StorageTier StorageTier  `json:"storage_tier,omitempty"`
	Event       KvCacheEvent `json:"event"`
}

// Tier returns the event's storage tier, TierDevice when absent.
func (e *RouterEvent) Tier() StorageTier {
	if e.StorageTier == "" {
		return TierDevice
	}
	return e.StorageTier
}

// KvCacheEvent is one ordered event of one (worker, dp rank) publisher.
type KvCacheEvent struct {
	EventID uint64           `json:"event_id"`
	Data    KvCacheEventData `json:"data"`
	DpRank  uint32           `json:"dp_rank"`
}

// EventKind says which variant a KvCacheEventData holds.
type EventKind uint8

// The three variants of Dynamo's KvCacheEventData.
const (
	KindStored EventKind = iota + 1
	KindRemoved
	KindCleared
)

func (k EventKind) String() string {
	switch k {
	case KindStored:
		return "stored"
	case KindRemoved:
		return "removed"
	case KindCleared:
		return "cleared"
	}
	return "unknown"
}

// KvCacheEventData is serde's externally tagged enum: {"stored": {...}},
// {"removed": {...}} or the bare string "cleared".
type KvCacheEventData struct {
	Kind    EventKind
	Stored  *KvCacheStoreData
	Removed *KvCacheRemoveData
}

// KvCacheStoreData lists blocks stored after ParentHash (nil: at the root).
type KvCacheStoreData struct {
	ParentHash    *BlockHash    `json:"parent_hash"`
	StartPosition *uint32       `json:"start_position,omitempty"`
	Blocks        []StoredBlock `json:"blocks"`
}

// StoredBlock pairs the engine's sequence hash with Dynamo's local hash of
// the block's tokens.
type StoredBlock struct {
	BlockHash  BlockHash `json:"block_hash"`
	TokensHash BlockHash `json:"tokens_hash"`
}

// KvCacheRemoveData lists removed blocks by engine sequence hash.
type KvCacheRemoveData struct {
	BlockHashes []BlockHash `json:"block_hashes"`
}

// BlockHash is a 64-bit block hash. It decodes from an unsigned or a
// negative (two's complement, as SGLang's int64 hashes) JSON integer.
type BlockHash uint64

// UnmarshalJSON accepts any JSON integer that fits 64 bits.
func (h *BlockHash) UnmarshalJSON(b []byte) error {
	s := string(b)
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		*h = BlockHash(u)
		return nil
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return &reasonError{"block hash not a 64-bit integer", fmt.Sprintf("block hash %.40s is not a 64-bit integer", s)}
	}
	*h = BlockHash(uint64(i))
	return nil
}

// UnmarshalJSON decodes the externally tagged variant.
func (d *KvCacheEventData) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != "cleared" {
			return &reasonError{"unknown event tag", fmt.Sprintf("unknown event data variant %.40q", s)}
		}
		*d = KvCacheEventData{Kind: KindCleared}
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("event data: %w", err)
	}
	if len(m) != 1 {
		return fmt.Errorf("event data must have exactly one variant key, got %d", len(m))
	}
	for k, v := range m {
		switch k {
		case "stored":
			var s KvCacheStoreData
			if err := json.Unmarshal(v, &s); err != nil {
				return fmt.Errorf("stored: %w", err)
			}
			*d = KvCacheEventData{Kind: KindStored, Stored: &s}
		case "removed":
			var r KvCacheRemoveData
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("removed: %w", err)
			}
			*d = KvCacheEventData{Kind: KindRemoved, Removed: &r}
		case "cleared":
			*d = KvCacheEventData{Kind: KindCleared}
		default:
			return &reasonError{"unknown event tag", fmt.Sprintf("unknown event data variant %.40q", k)}
		}
	}
	return nil
}

// MarshalJSON encodes the variant as serde does.
func (d KvCacheEventData) MarshalJSON() ([]byte, error) {
	switch d.Kind {
	case KindStored:
		if d.Stored == nil {
			return nil, fmt.Errorf("stored event without data")
		}
		return json.Marshal(map[string]*KvCacheStoreData{"stored": d.Stored})
	case KindRemoved:
		if d.Removed == nil {
			return nil, fmt.Errorf("removed event without data")
		}
		return json.Marshal(map[string]*KvCacheRemoveData{"removed": d.Removed})
	case KindCleared:
		return []byte(`"cleared"`), nil
	}
	return nil, fmt.Errorf("unknown event kind %d", d.Kind)
}

// reasonError is an error of a custom UnmarshalJSON that names its own
// DecodeError reason, which encoding/json's errors cannot carry.
type reasonError struct{ reason, detail string }

func (e *reasonError) Error() string { return e.detail }
