package streams

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultRequestsMaxAge bounds the request and response streams hintstream
// creates. It must not be below the request index's TTL (1h by default):
// a response trailing its request by up to that TTL must still find the
// request in the stream.
const DefaultRequestsMaxAge = 2 * time.Hour

// MetadataCreatedBy is the stream metadata key hintstream sets on every
// stream it creates (value "hintstream"). It is how a member tells its own
// KV-event stream, which it may purge behind a snapshot, from a foreign
// one such as Dynamo's, which it never touches. An existing stream is
// never given this key: attaching does not change a stream.
const MetadataCreatedBy = "hintstream.created_by"

const createdByValue = "hintstream"

// ErrBadPlacement: a replica count or placement tag is not valid.
var ErrBadPlacement = errors.New("streams: bad replicas or placement")

// MaxReplicas is the server's limit on stream replicas.
const MaxReplicas = 5

// CreatedByHintstream reports whether the stream was created by
// hintstream (it carries MetadataCreatedBy).
func CreatedByHintstream(info *jetstream.StreamInfo) bool {
	return info != nil && info.Config.Metadata[MetadataCreatedBy] == createdByValue
}

// Placement is where the streams, buckets and object store hintstream
// creates are kept: how many replicas, on servers with which tags. The
// zero value is one replica, anywhere.
type Placement struct {
	Replicas int      // default 1; at most MaxReplicas
	Tags     []string // server tags every replica's server must carry
}

// Validate checks the replica count (0 meaning 1) and the tags.
func (p Placement) Validate() error {
	if p.Replicas < 0 || p.Replicas > MaxReplicas {
		return fmt.Errorf("%w: replicas must be 1..%d, got %d", ErrBadPlacement, MaxReplicas, p.Replicas)
	}
	if slices.Contains(p.Tags, "") {
		return fmt.Errorf("%w: empty placement tag", ErrBadPlacement)
	}
	return nil
}

// JetStream is the server-side Placement (nil when no tags are given, so
// the server places freely).
func (p Placement) JetStream() *jetstream.Placement {
	if len(p.Tags) == 0 {
		return nil
	}
	return &jetstream.Placement{Tags: slices.Clone(p.Tags)}
}

// Apply sets p on every stream of s.
func (s Set) Apply(p Placement) Set {
	for _, c := range []*Config{&s.Requests, &s.Responses, &s.KVEvents, &s.Load, &s.DeadLetter} {
		c.Replicas, c.PlacementTags = p.Replicas, slices.Clone(p.Tags)
	}
	return s
}

func (c Config) placement() *jetstream.Placement {
	return Placement{Tags: c.PlacementTags}.JetStream()
}
