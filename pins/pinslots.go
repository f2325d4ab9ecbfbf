package pins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// DefaultPinSlotBucket names the KV bucket of live pins, one per session.
const DefaultPinSlotBucket = "hintstream_pins"

// PinRecord is a session's live pin, shared by the group: the member that
// sees the session's next request may not be the one that pinned.
type PinRecord struct {
	Slot          string   `json:"slot"`
	Trigger       string   `json:"trigger"` // the response's request id
	Tools         []string `json:"tools,omitempty"`
	CompletedAtMs int64    `json:"completed_at_ms"`
	ExpiresAtMs   int64    `json:"expires_at_ms"`
}

// PinSlots keeps PinRecords in a KV bucket whose TTL is Mooncake's soft
// pin maximum (24 h), so records outlive no pin.
type PinSlots struct {
	kv jetstream.KeyValue
	js jetstream.JetStream // for pipelined writes (RenewBatch)
	// subject prefix of the bucket's keys, "$KV.<bucket>."
	subject string
}

// OpenPinSlots creates or attaches to the bucket, capped at
// DefaultPinSlotsMaxBytes unless WithMaxBytes says otherwise (see
// bucketcap.go for a full bucket).
func OpenPinSlots(ctx context.Context, js jetstream.JetStream, bucket string, opts ...BucketOption) (*PinSlots, error) {
	if bucket == "" {
		bucket = DefaultPinSlotBucket
	}
	bo := bucketOpts(DefaultPinSlotsMaxBytes, opts)
	kv, err := js.KeyValue(ctx, bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: 24 * time.Hour,
			Description: "hintstream: live tool-call pin per session", MaxBytes: bo.maxBytes})
	} else if err == nil {
		err = bo.checkCap(ctx, js, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("pin slot bucket %s: %w", bucket, err)
	}
	return &PinSlots{kv: kv, js: js, subject: "$KV." + bucket + "."}, nil
}

func slotKey(session string) string { return strconv.FormatUint(xxh3.HashString(session), 16) }

// Put records the session's live pin, replacing the previous one.
func (p *PinSlots) Put(ctx context.Context, session string, r PinRecord) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = p.kv.Put(ctx, slotKey(session), b)
	return err
}

// Take removes and returns the session's live pin. Of several members
// taking the same record at once, exactly one gets it (the delete is
// conditional on the revision read).
func (p *PinSlots) Take(ctx context.Context, session string) (PinRecord, bool, error) {
	e, err := p.kv.Get(ctx, slotKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return PinRecord{}, false, nil
	}
	if err != nil {
		return PinRecord{}, false, err
	}
	var r PinRecord
	if json.Unmarshal(e.Value(), &r) != nil {
		_ = p.kv.Delete(ctx, slotKey(session), jetstream.LastRevision(e.Revision()))
		return PinRecord{}, false, nil
	}
	if err := p.kv.Delete(ctx, slotKey(session), jetstream.LastRevision(e.Revision())); err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return PinRecord{}, false, nil // another member took it
		}
		return PinRecord{}, false, err
	}
	return r, true, nil
}

// Renew sets the expiry of the session's pin to expiresAtMs if its record
// is still the pin of trigger; false if the record is gone (the session's
// next turn took it) or names a newer pin. It is conditional on the
// revision read, so a Take between the read and the write wins.
func (p *PinSlots) Renew(ctx context.Context, session, trigger string, expiresAtMs int64) (bool, error) {
	e, err := p.kv.Get(ctx, slotKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var r PinRecord
	if json.Unmarshal(e.Value(), &r) != nil || r.Trigger != trigger {
		return false, nil
	}
	r.ExpiresAtMs = expiresAtMs
	b, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	if _, err := p.kv.Update(ctx, slotKey(session), b, e.Revision()); err != nil {
		if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
