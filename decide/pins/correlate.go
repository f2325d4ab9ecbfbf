package pins

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// DefaultRequestIndexBucket names the KV bucket that maps request ids to
// their place in the requests stream.
const DefaultRequestIndexBucket = "hintstream_requests"

// ErrRequestNotFound means the request of a response is not (yet) indexed,
// or no longer in the stream.
var ErrRequestNotFound = errors.New("request not found")

// RequestIndex lets any member of a consumer group read back the request
// of a response that another member consumed: the stream keeps the
// request (prompt tokens and all); the index keeps only where it is, the
// stream sequence, keyed by a hash of the request id (ids need not be
// valid KV keys). Entries expire with the bucket's TTL.
type RequestIndex struct {
	kv     jetstream.KeyValue
	stream jetstream.Stream
	lim    schemas.Limits
}

// IndexEntry is what the index keeps of one request.
type IndexEntry struct {
	Seq uint64
	// SimToolMs is the request's x-dynamo-experimental-sim-tool-call value
	// (0 when absent): its response is pinned even without a tool call.
	SimToolMs int64
}

// OpenRequestIndex creates or attaches to the bucket (TTL: how long a
// response may trail its request; default 1h; capped at
// DefaultRequestIndexMaxBytes unless WithMaxBytes says otherwise, see
// bucketcap.go) over the requests stream.
func OpenRequestIndex(ctx context.Context, js jetstream.JetStream, bucket, stream string, ttl time.Duration, lim schemas.Limits, opts ...BucketOption) (*RequestIndex, error) {
	if bucket == "" {
		bucket = DefaultRequestIndexBucket
	}
	if ttl <= 0 {
		ttl = time.Hour
	}
	bo := bucketOpts(DefaultRequestIndexMaxBytes, opts)
	kv, created, err := streams.OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, History: 1, TTL: ttl,
		Description: "hintstream: request id -> requests stream sequence", MaxBytes: bo.maxBytes})
	if err == nil && !created {
		err = bo.checkCap(ctx, js, bucket)
	}
	if err != nil {
		return nil, fmt.Errorf("request index bucket %s: %w", bucket, err)
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("request index: stream %s: %w", stream, err)
	}
	return &RequestIndex{kv: kv, stream: s, lim: lim}, nil
}

func indexKey(requestID string) string {
	return strconv.FormatUint(xxh3.HashString(requestID), 16)
}

// Put records where req is in the stream (only its id and e are kept).
func (x *RequestIndex) Put(ctx context.Context, req *schemas.RequestEvent, e IndexEntry) error {
	v := strconv.FormatUint(e.Seq, 10)
	if e.SimToolMs > 0 {
		v += " " + strconv.FormatInt(e.SimToolMs, 10)
	}
	_, err := x.kv.Put(ctx, indexKey(req.RequestID), []byte(v))
	return err
}

// Entry returns the index entry of requestID, or ErrRequestNotFound.
func (x *RequestIndex) Entry(ctx context.Context, requestID string) (IndexEntry, error) {
	kve, err := x.kv.Get(ctx, indexKey(requestID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return IndexEntry{}, ErrRequestNotFound
	}
	if err != nil {
		return IndexEntry{}, err
	}
	f := strings.Fields(string(kve.Value()))
	var e IndexEntry
	if len(f) == 0 {
		return e, ErrRequestNotFound
	}
	if e.Seq, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return e, ErrRequestNotFound
	}
	if len(f) > 1 {
		e.SimToolMs, _ = strconv.ParseInt(f[1], 10, 64)
	}
	return e, nil
}

// Request reads the request at e back from the stream and checks it is
// the one asked for (the key is a hash).
func (x *RequestIndex) Request(ctx context.Context, requestID string, e IndexEntry) (*schemas.RequestEvent, error) {
	m, err := x.stream.GetMsg(ctx, e.Seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrRequestNotFound
	}
	if err != nil {
		return nil, err
	}
	req, err := x.lim.DecodeRequest(m.Data, m.Header.Get("Content-Type"))
	if err != nil || req.RequestID != requestID {
		return nil, ErrRequestNotFound
	}
	return req, nil
}
