package streams

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
)

// Patient wraps js so that its lookups (Stream, KeyValue, ObjectStore,
// Consumer) retry a request that timed out, or that the cluster could not
// answer yet, as Ensure does: each try within js's request timeout, for up
// to DefaultRetryTimeouts (WithRetryTimeouts). A lookup changes nothing,
// so trying it again is safe; a cluster electing its meta leader drops
// requests rather than refusing them, and without this one dropped lookup
// waits out the caller's whole context (seen in CI: 90 s). Other methods
// are js's own.
func Patient(js jetstream.JetStream, opts ...EnsureOption) jetstream.JetStream {
	return patientJetStream{JetStream: js, o: buildOpts(opts)}
}

type patientJetStream struct {
	jetstream.JetStream
	o ensureOpts
}

func (j patientJetStream) Stream(ctx context.Context, name string) (st jetstream.Stream, err error) {
	err = retryTimeouts(ctx, j.JetStream, j.o, "stream "+name, func(ctx context.Context) error {
		st, err = j.JetStream.Stream(ctx, name)
		return err
	})
	return st, err
}

func (j patientJetStream) KeyValue(ctx context.Context, bucket string) (kv jetstream.KeyValue, err error) {
	err = retryTimeouts(ctx, j.JetStream, j.o, "bucket "+bucket, func(ctx context.Context) error {
		kv, err = j.JetStream.KeyValue(ctx, bucket)
		return err
	})
	return kv, err
}

func (j patientJetStream) ObjectStore(ctx context.Context, bucket string) (obs jetstream.ObjectStore, err error) {
	err = retryTimeouts(ctx, j.JetStream, j.o, "object store "+bucket, func(ctx context.Context) error {
		obs, err = j.JetStream.ObjectStore(ctx, bucket)
		return err
	})
	return obs, err
}

func (j patientJetStream) Consumer(ctx context.Context, stream, name string) (c jetstream.Consumer, err error) {
	err = retryTimeouts(ctx, j.JetStream, j.o, "consumer "+stream+"/"+name, func(ctx context.Context) error {
		c, err = j.JetStream.Consumer(ctx, stream, name)
		return err
	})
	return c, err
}
