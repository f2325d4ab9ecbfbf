package schemas

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// DefaultAffinityBucket is the JetStream KV bucket where hintstream
// records each wake-up's worker choice, for a frontend to hand to the
// router as the session's next request's worker (client.PreferredWorker).
const DefaultAffinityBucket = "hintstream_affinity"

// MaxAffinitySession bounds the session ids that get a record: a key is
// the id's base64 (4/3 longer), and NATS subjects should stay short.
const MaxAffinitySession = 512

// AffinityRecord is one entry of the affinity bucket, JSON under
// AffinityKey(session_id): the worker (and dp rank) a wake-up's prefetch
// went to, until the prefetch's own expires_at_ms. After that the
// prefetched pages may be gone and the router should choose freely.
type AffinityRecord struct {
	WorkerID    uint64 `json:"worker_id"`
	DpRank      uint32 `json:"dp_rank"`
	ExpiresAtMs int64  `json:"expires_at_ms"`
	// RequestID is the wake-up's request_id (for tracing).
	RequestID string `json:"request_id,omitempty"`
	// Recent are the session's earlier wake-ups whose prefetch is still
	// unexpired, newest first, at most MaxAffinityRecent: when a
	// session's turns overlap (its next wake-up comes before the turn of
	// the last) or it forks, each turn still finds the worker its own
	// wake-up's prefetch went to (client.Affinity.PreferredWorkerFor).
	Recent []AffinityEntry `json:"recent,omitempty"`
}

// AffinityEntry is one earlier wake-up of AffinityRecord.Recent.
type AffinityEntry struct {
	WorkerID    uint64 `json:"worker_id"`
	DpRank      uint32 `json:"dp_rank"`
	ExpiresAtMs int64  `json:"expires_at_ms"`
	RequestID   string `json:"request_id"`
}

// MaxAffinityRecent bounds AffinityRecord.Recent; MaxAffinityRecentID
// bounds the request ids kept there, so a record stays well inside the
// decoder's 4,096 bytes.
const (
	MaxAffinityRecent   = 7
	MaxAffinityRecentID = 256
)

// AffinityKey is session's key in the affinity bucket: its unpadded
// URL-safe base64, which uses only characters NATS KV keys allow
// (A-Z a-z 0-9 - _), so any session id maps to a valid key and distinct
// ids to distinct keys. It returns "" for an empty id or one longer than
// MaxAffinitySession bytes: such sessions get no record.
func AffinityKey(session string) string {
	if session == "" || len(session) > MaxAffinitySession {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString([]byte(session))
}

// SessionOfAffinityKey inverts AffinityKey; ok is false for a key no
// session maps to.
func SessionOfAffinityKey(key string) (string, bool) {
	b, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil || len(b) == 0 || len(b) > MaxAffinitySession {
		return "", false
	}
	return string(b), true
}

// DecodeAffinityRecord decodes an affinity bucket entry. It fails with a
// *DecodeError (errors.Is ErrMalformed) on anything but one JSON object
// with a non-zero worker_id and a positive expires_at_ms; unknown fields
// are ignored (newer writers may add some).
func DecodeAffinityRecord(data []byte) (*AffinityRecord, error) {
	const kind = "affinity"
	if len(data) > 4096 {
		return nil, malformed(kind, "too large", nil)
	}
	var r AffinityRecord
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&r); err != nil {
		return nil, malformed(kind, "invalid JSON", err)
	}
	if dec.More() {
		return nil, malformed(kind, "trailing data", nil)
	}
	switch {
	case r.WorkerID == 0:
		return nil, malformed(kind, "missing worker_id", nil)
	case r.ExpiresAtMs <= 0:
		return nil, malformed(kind, "missing expires_at_ms", nil)
	case len(r.Recent) > MaxAffinityRecent:
		return nil, malformed(kind, "too many recent entries", nil)
	}
	return &r, nil
}

// Encode is the record's JSON, byte for byte json.Marshal's.
func (r AffinityRecord) Encode() []byte {
	// Written out rather than reflected (measured: one per wake-up);
	// json.Marshal only for a request id it would escape.
	if !plainJSONString(r.RequestID) || len(r.Recent) > 0 {
		b, _ := json.Marshal(r) // cannot fail: numbers and a string
		return b
	}
	b := make([]byte, 0, 64+len(r.RequestID))
	b = append(b, `{"worker_id":`...)
	b = strconv.AppendUint(b, r.WorkerID, 10)
	b = append(b, `,"dp_rank":`...)
	b = strconv.AppendUint(b, uint64(r.DpRank), 10)
	b = append(b, `,"expires_at_ms":`...)
	b = strconv.AppendInt(b, r.ExpiresAtMs, 10)
	if r.RequestID != "" {
		b = append(b, `,"request_id":"`...)
		b = append(b, r.RequestID...)
		b = append(b, '"')
	}
	return append(b, '}')
}

// plainJSONString: s is printable ASCII that encoding/json writes as it
// is (it escapes quotes, backslashes, control characters, and <, >, &
// for HTML).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
