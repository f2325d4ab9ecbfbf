package pins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Bucket size caps: hintstream_pins (~250 B per session, 24 h TTL) and
// hintstream_requests (~75 B per request, 1 h TTL) grow with traffic and
// had no bound but the TTL. Each now has a MaxBytes cap. JetStream KV
// buckets discard new writes when full, so a full bucket refuses what
// would grow it: a full hintstream_requests leaves new requests
// unindexed (their responses find no request and are not pinned;
// counted in pins.request_index_full), and a full hintstream_pins leaves
// new pins unrecorded (the pin is still sent, but neither renewed nor
// released on the next turn: it lapses at its TTL; counted in
// pins.slots_full). Wake-ups are not affected. Room comes back as
// entries expire.

// Default caps.
const (
	// DefaultPinSlotsMaxBytes holds about 1M live pins of ~250 B.
	DefaultPinSlotsMaxBytes int64 = 256 << 20
	// DefaultRequestIndexMaxBytes holds about 7M entries of ~75 B: an
	// hour (the default TTL) of 2,000 requests/s.
	DefaultRequestIndexMaxBytes int64 = 512 << 20
)

// BucketOption configures OpenPinSlots and OpenRequestIndex.
type BucketOption func(*bucketOptions)

type bucketOptions struct {
	maxBytes int64 // 0: the bucket's default; < 0: no cap
	update   bool
	log      *slog.Logger
	// slot buckets only (pinslots.go); 0: the defaults
	linger, markerTTL time.Duration
}

// WithMaxBytes caps the bucket at n bytes; n < 0 removes the cap, 0
// keeps the default.
func WithMaxBytes(n int64) BucketOption { return func(o *bucketOptions) { o.maxBytes = n } }

// WithUpdateBucket lets opening change an existing bucket's cap to the
// configured one (as --update-streams); without it a differing cap is
// kept and logged.
func WithUpdateBucket(update bool) BucketOption { return func(o *bucketOptions) { o.update = update } }

// WithBucketLogger sets the logger of that warning; default slog.Default().
func WithBucketLogger(l *slog.Logger) BucketOption { return func(o *bucketOptions) { o.log = l } }

func bucketOpts(def int64, opts []BucketOption) bucketOptions {
	o := bucketOptions{log: slog.Default()}
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	switch {
	case o.maxBytes == 0:
		o.maxBytes = def
	case o.maxBytes < 0:
		o.maxBytes = -1 // JetStream's "unlimited"
	}
	return o
}

// checkCap compares an existing bucket's cap with the configured one,
// and changes it only when allowed to.
func (o bucketOptions) checkCap(ctx context.Context, js jetstream.JetStream, bucket string) error {
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	cfg := st.CachedInfo().Config
	if cfg.MaxBytes == o.maxBytes {
		return nil
	}
	if !o.update {
		o.log.Warn("existing bucket keeps its size cap; --update-streams applies the configured one",
			"bucket", bucket, "max_bytes", cfg.MaxBytes, "configured", o.maxBytes)
		return nil
	}
	cfg.MaxBytes = o.maxBytes
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		return fmt.Errorf("bucket %s: setting max bytes %d: %w", bucket, o.maxBytes, err)
	}
	o.log.Info("bucket size cap changed", "bucket", bucket, "max_bytes", o.maxBytes)
	return nil
}

// isBucketFull reports a write refused because the bucket reached its
// MaxBytes (or MaxMsgs) cap.
func isBucketFull(err error) bool {
	if err == nil {
		return false
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Description, "maximum") {
		return true
	}
	return strings.Contains(err.Error(), "maximum bytes exceeded") || strings.Contains(err.Error(), "maximum messages exceeded")
}
