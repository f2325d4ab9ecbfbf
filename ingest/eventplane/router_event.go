package eventplane

import (
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// DecodeRouterEvent decodes a RouterEvent as rmp_serde::to_vec_named
// writes it (lib/kv-router/src/protocols.rs, see the package doc):
//
//	{worker_id, storage_tier, residency_domain?, event: {event_id,
//	 data, dp_rank}, state_source?}
//
// with data the bare string "cleared", or a one-entry map {"stored":
// {parent_hash, start_position, blocks: [{block_hash, tokens_hash,
// mm_extra_info}]}}, {"removed": {block_hashes}} or {"cleared": nil}.
// Keys come in any order and unknown ones are skipped, as serde does;
// storage_tier and dp_rank default as Dynamo's #[serde(default)] does.
// Hashes are msgpack integers, negative ones taken as two's complement.
// Arrays hold at most lim.MaxTokens entries.
//
// A well-formed event that hintstream does not index comes with a
// non-empty reason (one of the Ignore* constants): a cache-owner residency
// domain, or an unknown storage tier. Its worker and dp rank are still
// set, so that the caller can account for its place in the sequence.
func DecodeRouterEvent(payload []byte, lim schemas.Limits) (*schemas.RouterEvent, string, error) {
	return decodeRouterEvent(payload, fill(lim))
}

func decodeRouterEvent(b []byte, lim schemas.Limits) (*schemas.RouterEvent, string, error) {
	d := payloadDecoder{lim: lim}
	var ev schemas.RouterEvent
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return nil, "", d.bad("router event not a msgpack map", err)
	}
	var haveWorker, haveEvent bool
	var tier, domain []byte
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return nil, "", d.bad("key not a string", err)
		}
		switch string(key) {
		case "worker_id":
			haveWorker = true
			if ev.WorkerID, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return nil, "", d.bad("worker_id not an unsigned integer", err)
			}
		case "storage_tier":
			if tier, b, err = d.str(b); err != nil {
				return nil, "", d.bad("storage_tier not a string", err)
			}
		case "residency_domain":
			// Dynamo's WireResidencyDomain: a string; nil or any other
			// type is Invalid there, which its indexer rejects.
			if domain, b, err = d.str(b); err != nil {
				return nil, "", d.bad("residency_domain not a string", err)
			}
		case "event":
			haveEvent = true
			if b, err = d.event(b, &ev.Event); err != nil {
				return nil, "", err
			}
		default:
			if b, err = d.skip(b); err != nil {
				return nil, "", d.bad(skipReason(err), err)
			}
		}
	}
	switch {
	case !haveWorker:
		return nil, "", d.bad("missing worker_id", nil)
	case !haveEvent:
		return nil, "", d.bad("missing event", nil)
	case len(b) != 0:
		return nil, "", d.bad("trailing bytes after router event", nil)
	}
	ev.StorageTier = schemas.StorageTier(tier)
	switch {
	case domain != nil && string(domain) != "worker":
		return &ev, IgnoreResidencyDomain, nil
	case !ev.Tier().Valid():
		return &ev, IgnoreTier, nil
	}
	return &ev, "", nil
}

type payloadDecoder struct{ lim schemas.Limits }

// skip skips an unknown field's value; RouterEvent nests at most 6 deep,
// so MaxDepth bounds what a skipped value may add.
func (d *payloadDecoder) skip(b []byte) ([]byte, error) {
	return schemas.SkipMsgpack(b, d.lim.MaxDepth)
}

func (d *payloadDecoder) bad(reason string, err error) error {
	return malformed(kindPayload, reason, err)
}

// str reads a UTF-8 str of at most MaxString bytes.
func (d *payloadDecoder) str(b []byte) ([]byte, []byte, error) {
	s, b, err := msgp.ReadStringZC(b)
	if err != nil {
		return nil, b, err
	}
	if len(s) > d.lim.MaxString || !utf8.Valid(s) {
		return nil, b, d.bad("string too long or not UTF-8", nil)
	}
	return s, b, nil
}

// event reads a KvCacheEvent.
func (d *payloadDecoder) event(b []byte, e *schemas.KvCacheEvent) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("event not a msgpack map", err)
	}
	var haveID bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		switch string(key) {
		case "event_id":
			haveID = true
			if e.EventID, b, err = msgp.ReadUint64Bytes(b); err != nil {
				return b, d.bad("event_id not an unsigned integer", err)
			}
		case "dp_rank":
			if e.DpRank, b, err = msgp.ReadUint32Bytes(b); err != nil {
				return b, d.bad("dp_rank not a u32", err)
			}
		case "data":
			if b, err = d.data(b, &e.Data); err != nil {
				return b, err
			}
		default:
			if b, err = d.skip(b); err != nil {
				return b, d.bad(skipReason(err), err)
			}
		}
	}
	if !haveID {
		return b, d.bad("missing event_id", nil)
	}
	if e.Data.Kind == 0 {
		return b, d.bad("missing event data", nil)
	}
	return b, nil
}

// data reads the externally tagged KvCacheEventData.
func (d *payloadDecoder) data(b []byte, out *schemas.KvCacheEventData) ([]byte, error) {
	if msgp.NextType(b) == msgp.StrType {
		s, rest, err := msgp.ReadStringZC(b)
		if err != nil {
			return rest, d.bad("truncated msgpack", err)
		}
		if string(s) != "cleared" {
			return rest, d.bad("unknown event tag", nil)
		}
		*out = schemas.KvCacheEventData{Kind: schemas.KindCleared}
		return rest, nil
	}
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("event data neither a string nor a map", err)
	}
	if n != 1 {
		return b, d.bad("event data must have exactly one variant key", nil)
	}
	tag, b, err := msgp.ReadStringZC(b)
	if err != nil {
		return b, d.bad("key not a string", err)
	}
	switch string(tag) {
	case "stored":
		s := new(schemas.KvCacheStoreData)
		*out = schemas.KvCacheEventData{Kind: schemas.KindStored, Stored: s}
		return d.stored(b, s)
	case "removed":
		r := new(schemas.KvCacheRemoveData)
		*out = schemas.KvCacheEventData{Kind: schemas.KindRemoved, Removed: r}
		return d.removed(b, r)
	case "cleared":
		*out = schemas.KvCacheEventData{Kind: schemas.KindCleared}
		if b, err = msgp.ReadNilBytes(b); err != nil {
			return b, d.bad("cleared carries a value", err)
		}
		return b, nil
	}
	return b, d.bad("unknown event tag", nil)
}

func (d *payloadDecoder) stored(b []byte, s *schemas.KvCacheStoreData) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("stored not a msgpack map", err)
	}
	var haveParent, haveBlocks bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		switch string(key) {
		case "parent_hash":
			haveParent = true
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				continue
			}
			var h uint64
			if h, b, err = readHash(b); err != nil {
				return b, d.bad("block hash not a 64-bit integer", err)
			}
			p := schemas.BlockHash(h)
			s.ParentHash = &p
		case "start_position":
			if msgp.IsNil(b) {
				b, _ = msgp.ReadNilBytes(b)
				continue
			}
			var v uint32
			if v, b, err = msgp.ReadUint32Bytes(b); err != nil {
				return b, d.bad("start_position not a u32", err)
			}
			s.StartPosition = &v
		case "blocks":
			haveBlocks = true
			if b, err = d.blocks(b, s); err != nil {
				return b, err
			}
		default:
			if b, err = d.skip(b); err != nil {
				return b, d.bad(skipReason(err), err)
			}
		}
	}
	// parent_hash is an Option without #[serde(default)]: serde still
	// takes an absent Option as None, so only blocks is required.
	_ = haveParent
	if !haveBlocks {
		return b, d.bad("missing blocks", nil)
	}
	return b, nil
}

// arrayLen reads an array header of at most MaxTokens entries, each of
// at least min bytes, so a hostile header cannot make us allocate.
func (d *payloadDecoder) arrayLen(b []byte, min int) (int, []byte, error) {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return 0, b, d.bad("expected an array", err)
	}
	if int64(n) > int64(d.lim.MaxTokens) {
		return 0, b, d.bad("too many blocks", nil)
	}
	if int64(n)*int64(min) > int64(len(b)) {
		return 0, b, d.bad("truncated msgpack", nil)
	}
	return int(n), b, nil
}

func (d *payloadDecoder) blocks(b []byte, s *schemas.KvCacheStoreData) ([]byte, error) {
	// The smallest block is a fixmap of two fixstr keys and fixint values.
	n, b, err := d.arrayLen(b, 1+2*12)
	if err != nil {
		return b, err
	}
	s.Blocks = make([]schemas.StoredBlock, n)
	for i := range s.Blocks {
		if b, err = d.block(b, &s.Blocks[i]); err != nil {
			return b, err
		}
	}
	return b, nil
}

func (d *payloadDecoder) block(b []byte, blk *schemas.StoredBlock) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("block not a msgpack map", err)
	}
	var seen uint8
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		var h uint64
		switch string(key) {
		case "block_hash":
			seen |= 1
			h, b, err = readHash(b)
			blk.BlockHash = schemas.BlockHash(h)
		case "tokens_hash":
			seen |= 2
			h, b, err = readHash(b)
			blk.TokensHash = schemas.BlockHash(h)
		default:
			// mm_extra_info among others: the local hash already folds in
			// the block's multimodal objects.
			if b, err = d.skip(b); err != nil {
				return b, d.bad(skipReason(err), err)
			}
			continue
		}
		if err != nil {
			return b, d.bad("block hash not a 64-bit integer", err)
		}
	}
	if seen != 3 {
		return b, d.bad("block misses block_hash or tokens_hash", nil)
	}
	return b, nil
}

func (d *payloadDecoder) removed(b []byte, r *schemas.KvCacheRemoveData) ([]byte, error) {
	n, b, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return b, d.bad("removed not a msgpack map", err)
	}
	var have bool
	for ; n > 0; n-- {
		var key []byte
		if key, b, err = msgp.ReadStringZC(b); err != nil {
			return b, d.bad("key not a string", err)
		}
		if string(key) != "block_hashes" {
			if b, err = d.skip(b); err != nil {
				return b, d.bad(skipReason(err), err)
			}
			continue
		}
		have = true
		var m int
		if m, b, err = d.arrayLen(b, 1); err != nil {
			return b, err
		}
		r.BlockHashes = make([]schemas.BlockHash, m)
		for i := range r.BlockHashes {
			var h uint64
			if h, b, err = readHash(b); err != nil {
				return b, d.bad("block hash not a 64-bit integer", err)
			}
			r.BlockHashes[i] = schemas.BlockHash(h)
		}
	}
	if !have {
		return b, d.bad("missing block_hashes", nil)
	}
	return b, nil
}

// readHash reads a msgpack integer as 64 bits: Dynamo writes u64, and an
// i64 (SGLang's hashes, converted with `as u64` upstream) is taken as its
// two's complement.
func readHash(b []byte) (uint64, []byte, error) {
	if msgp.NextType(b) == msgp.IntType {
		v, rest, err := msgp.ReadInt64Bytes(b)
		return uint64(v), rest, err
	}
	return msgp.ReadUint64Bytes(b)
}
