package streams

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/internal/retry"
)

// OpenKeyValue attaches to the KV bucket cfg.Bucket, creating it with cfg
// when absent; created says which. An existing bucket's configuration is
// never changed. A lookup or create that timed out is retried, with
// backoff, for up to DefaultRetryTimeouts (WithRetryTimeouts), as Ensure
// does for streams: a 3-node cluster placing a replicated bucket under
// load answers late rather than never (seen in CI: an R3 bucket's lookup
// waited out a 90 s context). Any other error fails at once.
func OpenKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, opts ...EnsureOption) (kv jetstream.KeyValue, created bool, err error) {
	err = retryTimeouts(ctx, js, buildOpts(opts), "bucket "+cfg.Bucket, func(ctx context.Context) error {
		kv, created, err = openKeyValueOnce(ctx, js, cfg)
		return err
	})
	return kv, created, err
}

func openKeyValueOnce(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, bool, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if err == nil {
		return kv, false, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, false, fmt.Errorf("attach bucket %q: %w", cfg.Bucket, err)
	}
	kv, err = js.CreateKeyValue(ctx, cfg)
	if errors.Is(err, jetstream.ErrBucketExists) {
		// Created concurrently by someone else (maybe with another
		// config, or by our own try that timed out): attach to theirs.
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		if err != nil {
			return nil, false, fmt.Errorf("attach bucket %q: %w", cfg.Bucket, err)
		}
		return kv, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("create bucket %q: %w", cfg.Bucket, err)
	}
	return kv, true, nil
}

// OpenObjectStore is OpenKeyValue for an object store.
func OpenObjectStore(ctx context.Context, js jetstream.JetStream, cfg jetstream.ObjectStoreConfig, opts ...EnsureOption) (obs jetstream.ObjectStore, err error) {
	err = retryTimeouts(ctx, js, buildOpts(opts), "object store "+cfg.Bucket, func(ctx context.Context) error {
		obs, err = js.ObjectStore(ctx, cfg.Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			obs, err = js.CreateObjectStore(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				obs, err = js.ObjectStore(ctx, cfg.Bucket)
			}
		}
		if err != nil {
			return fmt.Errorf("object store %q: %w", cfg.Bucket, err)
		}
		return nil
	})
	return obs, err
}

// retryTimeouts runs op, each try within js's request timeout even when
// ctx allows longer (a request a busy server dropped is then retried,
// not waited for until ctx ends), and retries a try that timed out, or
// that the cluster could not place yet (transient), until o.retryFor has
// passed. Any other error, or ctx ending, returns at once.
func retryTimeouts(ctx context.Context, js jetstream.JetStream, o ensureOpts, what string, op func(context.Context) error) error {
	until := time.Now().Add(o.retryFor)
	b := retry.Doubling(100*time.Millisecond, 2*time.Second)
	for {
		try := js.Options().DefaultTimeout
		if try <= 0 {
			try = 5 * time.Second // nats.go's own default (jetstream.go, defaultAPITimeout, v1.55.0)
		}
		actx, cancel := context.WithTimeout(ctx, try)
		err := op(actx)
		cancel()
		if err == nil || !transient(ctx, err) {
			return err
		}
		wait := b.NextBackOff()
		if !time.Now().Add(wait).Before(until) {
			return err
		}
		o.log.Warn("JetStream not ready to answer; retrying", "what", what, "err", err, "retry_in", wait)
		if !retry.Wait(ctx, wait) {
			return err
		}
	}
}
