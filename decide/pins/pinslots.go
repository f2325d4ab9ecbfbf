package pins

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// DefaultPinSlotBucket names the KV bucket of live pins, one per session.
const DefaultPinSlotBucket = "hintstream_pins"

// Slot record lifetimes. A record is written with a per-message TTL (the
// bucket allows them, see OpenPinSlots) of its pin's remaining TTL plus
// DefaultSlotLinger, so the record of an abandoned session leaves the
// bucket minutes after its pin lapsed instead of after the bucket's 24 h;
// the delete marker a next turn leaves goes after DefaultSlotMarkerTTL.
// At 200 new sessions/s the bucket then holds about (pin TTL + linger) x
// 200 records, flat under steady churn (docs/limits.md).
const (
	// DefaultSlotLinger keeps a lapsed pin's record so that a session
	// coming back after its pin lapsed still teaches the tool-time
	// learner its gap and still releases nothing twice.
	DefaultSlotLinger = 10 * time.Minute
	// DefaultSlotMarkerTTL is how long a released slot's delete marker
	// stays: long enough for every member's conditional write racing it
	// to see it, the minimum JetStream accepts being 1 s.
	DefaultSlotMarkerTTL = time.Minute
)

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
// pin maximum (24 h), so records outlive no pin. Every write's stream
// sequence (the KV revision) is the revision of the pin message it
// records (actions.Pin.Revision): it grows per slot across every member
// of a group, since they all write the same bucket.
type PinSlots struct {
	kv jetstream.KeyValue
	js jetstream.JetStream // for pipelined and TTL'd writes
	// subject prefix of the bucket's keys, "$KV.<bucket>."
	subject string
	// msgTTL: the bucket allows per-message TTLs (records and markers
	// leave on the schedule above); false on a bucket created before,
	// whose records stay the bucket's 24 h.
	msgTTL            bool
	now               func() time.Time
	linger, markerTTL time.Duration
}

// OpenPinSlots creates or attaches to the bucket, capped at
// DefaultPinSlotsMaxBytes unless WithMaxBytes says otherwise (see
// bucketcap.go for a full bucket). A new bucket allows per-message TTLs;
// an existing one without them gets them with WithUpdateBucket, and
// otherwise keeps its records 24 h (logged).
func OpenPinSlots(ctx context.Context, js jetstream.JetStream, bucket string, opts ...BucketOption) (*PinSlots, error) {
	if bucket == "" {
		bucket = DefaultPinSlotBucket
	}
	bo := bucketOpts(DefaultPinSlotsMaxBytes, opts)
	if bo.linger == 0 {
		bo.linger = DefaultSlotLinger
	}
	if bo.markerTTL == 0 {
		bo.markerTTL = DefaultSlotMarkerTTL
	}
	cfg := jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: 24 * time.Hour,
		Description: "hintstream: live tool-call pin per session", MaxBytes: bo.maxBytes,
		LimitMarkerTTL: bo.markerTTL}
	kv, created, err := streams.OpenKeyValue(ctx, js, cfg)
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		// A server before 2.11 has no per-message TTLs: records then
		// stay the bucket's 24 h (checkMsgTTL warns).
		cfg.LimitMarkerTTL = 0
		kv, created, err = streams.OpenKeyValue(ctx, js, cfg)
	}
	if err == nil && !created {
		err = bo.checkCap(ctx, js, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("pin slot bucket %s: %w", bucket, err)
	}
	msgTTL, err := bo.checkMsgTTL(ctx, js, bucket)
	if err != nil {
		return nil, fmt.Errorf("pin slot bucket %s: %w", bucket, err)
	}
	return &PinSlots{kv: kv, js: js, subject: "$KV." + bucket + ".", msgTTL: msgTTL, now: time.Now,
		linger: bo.linger, markerTTL: bo.markerTTL}, nil
}

// checkMsgTTL reports whether the bucket allows per-message TTLs, turning
// them on when allowed to update it.
func (o bucketOptions) checkMsgTTL(ctx context.Context, js jetstream.JetStream, bucket string) (bool, error) {
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return false, err
	}
	cfg := st.CachedInfo().Config
	if cfg.AllowMsgTTL {
		return true, nil
	}
	if !o.update {
		o.log.Warn("existing pin slot bucket has no per-message TTLs: records of abandoned sessions stay 24 h; --update-streams turns them on",
			"bucket", bucket)
		return false, nil
	}
	cfg.AllowMsgTTL = true
	if cfg.SubjectDeleteMarkerTTL == 0 {
		cfg.SubjectDeleteMarkerTTL = o.markerTTL
	}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		// A server without per-message TTLs: the bucket works as before.
		o.log.Warn("pin slot bucket cannot allow per-message TTLs: records of abandoned sessions stay 24 h",
			"bucket", bucket, "err", err)
		return false, nil
	}
	o.log.Info("pin slot bucket allows per-message TTLs", "bucket", bucket)
	return true, nil
}

// WithSlotLinger sets how long a slot record outlives its pin
// (DefaultSlotLinger when 0); a negative value keeps the default.
func WithSlotLinger(d time.Duration) BucketOption {
	return func(o *bucketOptions) { o.linger = max(d, 0) }
}

// WithSlotMarkerTTL sets how long a released slot's delete marker stays
// (DefaultSlotMarkerTTL when 0; JetStream's minimum is 1 s, below it
// the default is kept). It applies to a bucket created or updated here.
func WithSlotMarkerTTL(d time.Duration) BucketOption {
	return func(o *bucketOptions) {
		if d >= time.Second {
			o.markerTTL = d
		}
	}
}

func slotKey(session string) string { return strconv.FormatUint(xxh3.HashString(session), 16) }

// recordTTL is how long the record of a pin expiring at expiresAtMs
// stays: its remaining TTL plus the linger, within [1s, 24h].
func (p *PinSlots) recordTTL(expiresAtMs int64) time.Duration {
	left := time.Until(time.UnixMilli(expiresAtMs))
	if p.now != nil {
		left = time.UnixMilli(expiresAtMs).Sub(p.now())
	}
	return min(max(max(left, 0)+p.linger, time.Second), 24*time.Hour)
}

func (p *PinSlots) publishOpts(r PinRecord, opts ...jetstream.PublishOpt) []jetstream.PublishOpt {
	if p.msgTTL {
		opts = append(opts, jetstream.WithMsgTTL(p.recordTTL(r.ExpiresAtMs)))
	}
	return opts
}

// Put records the session's live pin, replacing the previous one, and
// returns the record's revision.
func (p *PinSlots) Put(ctx context.Context, session string, r PinRecord) (uint64, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	ack, err := p.js.Publish(ctx, p.subject+slotKey(session), b, p.publishOpts(r)...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Take removes and returns the session's live pin with the revision of
// its removal, unless the record is the pin of keep (the request whose
// own response already pinned: a response that overtook its request
// must not be released by it). Of several members taking the same
// record at once, exactly one gets it (the delete is conditional on the
// revision read).
func (p *PinSlots) Take(ctx context.Context, session, keep string) (PinRecord, uint64, bool, error) {
	e, err := p.kv.Get(ctx, slotKey(session))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return PinRecord{}, 0, false, nil
	}
	if err != nil {
		return PinRecord{}, 0, false, err
	}
	var r PinRecord
	bad := json.Unmarshal(e.Value(), &r) != nil
	if !bad && keep != "" && r.Trigger == keep {
		return PinRecord{}, 0, false, nil
	}
	rev, err := p.remove(ctx, session, e.Revision())
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			return PinRecord{}, 0, false, nil // another member took it, or a newer pin replaced it
		}
		return PinRecord{}, 0, false, err
	}
	if bad {
		return PinRecord{}, 0, false, nil
	}
	return r, rev, true, nil
}

// remove writes the slot's delete marker conditionally on revision last,
// with DefaultSlotMarkerTTL when the bucket allows it, and returns its
// revision.
func (p *PinSlots) remove(ctx context.Context, session string, last uint64) (uint64, error) {
	m := nats.NewMsg(p.subject + slotKey(session))
	m.Header.Set("KV-Operation", "DEL")
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(last)}
	if p.msgTTL {
		opts = append(opts, jetstream.WithMsgTTL(p.markerTTL))
	}
	ack, err := p.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// Renew sets the expiry of the session's pin to expiresAtMs if its record
// is still the pin of trigger, and returns the new revision; false if the
// record is gone (the session's next turn took it) or names a newer pin.
// It is conditional on the revision read, so a Take between the read and
// the write wins.
func (p *PinSlots) Renew(ctx context.Context, session, trigger string, expiresAtMs int64) (uint64, bool, error) {
	res := p.RenewBatch(ctx, []SlotRenewal{{Session: session, Trigger: trigger, ExpiresAtMs: expiresAtMs}})
	return res[0].Rev, res[0].OK, res[0].Err
}
