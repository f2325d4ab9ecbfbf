package lmcachepin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/xxh3"
)

// DefaultPinBucket is the JetStream KV bucket of held LMCache pins.
const DefaultPinBucket = "hintstream_lmcache_pins"

// maxStoredTokens bounds the tokens a Record keeps: 128 Ki tokens are
// 512 KiB, 683 KiB in base64, under NATS's default 1 MiB message. A
// longer pin is held whole, and after a restart re-pinned on its leading
// maxStoredTokens tokens (LMCache pins a prompt's chunks from the first).
const maxStoredTokens = 128 << 10

// Record is one held pin as the Store keeps it.
type Record struct {
	Slot     string `json:"slot"`
	Trigger  string `json:"trigger"`
	Instance string `json:"instance"`
	Location string `json:"location"`
	UntilMs  int64  `json:"until_ms"`
	// Tokens are u32 little-endian (base64 in JSON), at most
	// maxStoredTokens of them.
	Tokens []byte `json:"tokens"`
}

func packTokens(ts []uint32) []byte {
	ts = ts[:min(len(ts), maxStoredTokens)]
	b := make([]byte, 4*len(ts))
	for i, t := range ts {
		binary.LittleEndian.PutUint32(b[4*i:], t)
	}
	return b
}

func unpackTokens(b []byte) []uint32 {
	ts := make([]uint32, len(b)/4)
	for i := range ts {
		ts[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return ts
}

// errBadRecord wraps every reason a stored record is refused.
var errBadRecord = errors.New("lmcachepin: bad held-pin record")

// decodeRecord reads a stored record: JSON with a slot, a trigger, an
// instance, a location and whole u32 tokens (at most maxStoredTokens).
// Another version's or a hand-edited record that breaks these is
// refused, never half-used.
func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %w", errBadRecord, err)
	}
	switch {
	case r.Slot == "" || r.Trigger == "" || r.Instance == "" || r.Location == "":
		return Record{}, fmt.Errorf("%w: slot, trigger, instance and location are required", errBadRecord)
	case len(r.Tokens)%4 != 0 || len(r.Tokens) > 4*maxStoredTokens:
		return Record{}, fmt.Errorf("%w: %d token bytes, want whole u32 tokens, at most %d", errBadRecord, len(r.Tokens), maxStoredTokens)
	}
	return r, nil
}

// Store keeps the held pins across restarts: a KV bucket live (KVStore),
// a map in tests (MemStore). Get and List return what Put wrote; a slot
// Delete removed is gone.
type Store interface {
	Put(ctx context.Context, r Record) error
	Get(ctx context.Context, slot string) (Record, bool, error)
	Delete(ctx context.Context, slot string) error
	List(ctx context.Context) ([]Record, error)
}

// KVStore is a Store over a JetStream KV bucket. The bucket's TTL is
// actions.MaxPinTTL plus an hour: no pin is held longer, so a record a
// crash left is gone within a day even if no hintstream starts again.
type KVStore struct{ kv jetstream.KeyValue }

// OpenKVStore opens (or creates) the bucket ("" = DefaultPinBucket).
func OpenKVStore(ctx context.Context, js jetstream.JetStream, bucket string) (*KVStore, error) {
	if bucket == "" {
		bucket = DefaultPinBucket
	}
	kv, _, err := streams.OpenKeyValue(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, History: 1,
		TTL: actions.MaxPinTTL + time.Hour, Description: "hintstream: tool-call pins held in LMCache, with their deadlines"})
	if err != nil {
		return nil, fmt.Errorf("lmcachepin: %w", err)
	}
	return &KVStore{kv: kv}, nil
}

// key is a slot's KV key: slots hold session ids, which may use any
// character, and KV keys only a few.
func key(slot string) string { return strconv.FormatUint(xxh3.HashString(slot), 16) }

func (s *KVStore) Put(ctx context.Context, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = s.kv.Put(ctx, key(r.Slot), b)
	return err
}

func (s *KVStore) Get(ctx context.Context, slot string) (Record, bool, error) {
	e, err := s.kv.Get(ctx, key(slot))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	r, err := decodeRecord(e.Value())
	if err != nil || r.Slot != slot {
		return Record{}, false, err // a hash collision is another slot's record: not ours
	}
	return r, true, nil
}

func (s *KVStore) Delete(ctx context.Context, slot string) error {
	err := s.kv.Delete(ctx, key(slot))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	return err
}

// List reads every record; one that does not decode is skipped (and
// deleted: no version of hintstream can use it).
func (s *KVStore) List(ctx context.Context) ([]Record, error) {
	lister, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []Record
	for k := range lister.Keys() {
		e, err := s.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			_ = lister.Stop()
			return nil, err
		}
		r, err := decodeRecord(e.Value())
		if err != nil {
			_ = s.kv.Delete(ctx, k)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// MemStore is a Store in memory.
type MemStore struct {
	mu sync.Mutex
	m  map[string]Record
}

func NewMemStore() *MemStore { return &MemStore{m: map[string]Record{}} }

func (s *MemStore) Put(_ context.Context, r Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[r.Slot] = r
	return nil
}

func (s *MemStore) Get(_ context.Context, slot string) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[slot]
	return r, ok, nil
}

func (s *MemStore) Delete(_ context.Context, slot string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, slot)
	return nil
}

func (s *MemStore) List(context.Context) ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.m))
	for _, r := range s.m {
		out = append(out, r)
	}
	return out, nil
}
