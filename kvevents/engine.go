package kvevents

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

// The adapter for the msgpack EventBatch that vLLM and SGLang publish on
// their ZMQ PUB socket (vllm/distributed/kv_events.py,
// sglang/srt/disaggregation/kv_events.py). Both are msgspec structs and come
// in two shapes: array_like ([ts, events, dp_rank] with events
// [tag, fields...]) and tagged maps ({"ts", "events", "data_parallel_rank"}
// with events {"type": tag, ...}). The rules follow Dynamo's own reader,
// lib/kv-router/src/zmq_wire (deserialize.rs, filter.rs, convert.rs), except
// where the doc of DecodeEngineBatch says otherwise.
//
// The reader is hand-written over msgp's byte readers rather than generated:
// an event is a union (a tagged array or a tagged map) that msgp cannot
// express, and every array header is checked against the bytes left before
// anything is allocated for it, so a hostile header cannot make us
// allocate. Skipped values go through schemas.SkipMsgpack.

// engineBatchKind is the Kind of every DecodeError this adapter returns.
const engineBatchKind = "engine_batch"

// MaxEngineBatchEvents bounds the events in one batch; engines publish one
// batch per scheduler step, which holds far fewer.
const MaxEngineBatchEvents = 1 << 16

// minEventBytes is the smallest encoded event, ["AllBlocksCleared"]: an
// array header and a 17-byte fixstr. It caps the capacity reserved for a
// claimed event count.
const minEventBytes = 18

// IsEngineBatch reports whether data looks like a msgpack EventBatch (its
// first byte is a msgpack array or map header) rather than JSON, whose
// first byte is '{' or blank. It does not validate anything else.
func IsEngineBatch(data []byte) bool {
	return len(data) > 0 && (schemas.IsMsgpackArray(data[0]) || schemas.IsMsgpackMap(data[0]))
}

// DecodeEngineBatch decodes one msgpack EventBatch (array form or tagged-map
// form) for the given worker (from the subject) and returns normalised events
// in order. eventID is the batch's sequence number (0 = unknown), copied into
// every event's EventID. Errors are *schemas.DecodeError{Kind: "engine_batch"}
// (errors.Is(err, schemas.ErrMalformed)); a batch is decoded whole or not at
// all. Zero fields of lim take schemas.DefaultLimits.
//
// Conversion, per event:
//   - block hashes (and parent_block_hash) are msgpack ints, taken as u64
//     two's complement (SGLang sends i64), or bytes, folded to their last 8
//     bytes big-endian;
//   - medium maps to a tier as Dynamo's StorageTier::from_kv_medium; nil or
//     absent is the device tier (Event.Tier ""); an unknown medium gives
//     the tier "medium:<name>", which the index counts and ignores
//     (ErrUnknownTier; Dynamo would default it to device); a medium that is
//     not UTF-8 is malformed;
//   - BlockStored needs block_size > 0 and at least len(block_hashes) *
//     block_size token_ids (extra trailing tokens are ignored); fewer is
//     malformed (Dynamo would keep the covered prefix). LocalHash is
//     LocalBlockHashesSeeded of each block's tokens with the block seed
//     BlockSeed(lora_name, cache_salt), as Dynamo hashes a request naming
//     them: lora_name is vLLM's (array position 7 or the map key), cache_salt
//     a map key only (vLLM puts the salt in extra_keys, which Dynamo does not
//     read either); lora_id alone, all SGLang sends, names no adapter and
//     hashes with seed 1337. A lora_name or cache_salt longer than
//     lim.MaxString is malformed;
//   - as in Dynamo, a BlockStored whose hashes repeat (or repeat the parent)
//     is dropped, and so is a BlockStored or BlockRemoved of a KV-cache group
//     other than the main attention one (kv_cache_spec_kind not
//     full/mla/sink_full_attention, or else group_idx != 0): hybrid models
//     report every group with the same block hashes.
func DecodeEngineBatch(data []byte, workerID uint64, eventID uint64, lim schemas.Limits) ([]Event, error) {
	d := batchDecoder{}
	return d.decode(data, workerID, eventID, lim)
}

// decode is DecodeEngineBatch into d's memory: the events, and the
// slices they hold, are carved from d's arenas, which a fresh d allocates
// per call (the events own them) and a reused one (Decoder) overwrites at
// its next call.
func (d *batchDecoder) decode(data []byte, workerID uint64, eventID uint64, lim schemas.Limits) ([]Event, error) {
	lim = engineLimits(lim)
	if len(data) > lim.MaxBytes {
		return nil, malformed("message too large", nil)
	}
	d.lim, d.dpRank = lim, 0
	d.out, d.hashes, d.blocks, d.parents = d.out[:0], d.hashes[:0], d.blocks[:0], d.parents[:0]
	var (
		rest []byte
		err  error
	)
	switch {
	case len(data) == 0:
		return nil, malformed("empty message", nil)
	case schemas.IsMsgpackArray(data[0]):
		rest, err = d.arrayBatch(data)
	case schemas.IsMsgpackMap(data[0]):
		rest, err = d.mapBatch(data)
	default:
		return nil, malformed("not a msgpack array or map", nil)
	}
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, malformed("trailing bytes after msgpack", nil)
	}
	for i := range d.out {
		d.out[i].Worker = WorkerKey{WorkerID: workerID, DpRank: d.dpRank}
		d.out[i].EventID = eventID
	}
	return d.out, nil
}

// engineLimits fills the zero fields this adapter uses, as schemas does.
func engineLimits(l schemas.Limits) schemas.Limits {
	def := schemas.DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = def.MaxBytes
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = def.MaxTokens
	}
	if l.MaxString <= 0 {
		l.MaxString = def.MaxString
	}
	return l
}

type batchDecoder struct {
	lim    schemas.Limits
	out    []Event
	dpRank uint32
	tokens []uint32 // scratch for one event's token_ids, reused
	local  []uint64 // scratch for one event's local hashes, reused
	// Arenas of one batch, which its events' slices and parent hashes
	// point into (capped, so an append to one cannot overwrite the next).
	// An append that moves an arena leaves the earlier events on the old
	// array, whose content stays as it was.
	hashes  []uint64 // every block_hashes read: Removed, and stored blocks' before convert
	blocks  []Block
	parents []uint64
}

// arrayBatch reads [ts, events, data_parallel_rank?, ...]. SGLang's
// omit_defaults struct stops after events when dp rank is unset.
func (d *batchDecoder) arrayBatch(b []byte) ([]byte, error) {
	n, b, err := readArrayLen(b, "batch")
	if err != nil {
		return nil, err
	}
	if n < 2 {
		return nil, malformed("batch array needs ts and events", nil)
	}
	if b, err = skipNumber(b, "ts"); err != nil {
		return nil, err
	}
	if b, err = d.events(b); err != nil {
		return nil, err
	}
	if n >= 3 {
		if b, err = d.readDpRank(b); err != nil {
			return nil, err
		}
	}
	for range n - min(n, 3) {
		if b, err = skipField(b, "batch"); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// mapBatch reads {"ts", "events", "data_parallel_rank" (alias "dp_rank")};
// other keys are skipped.
func (d *batchDecoder) mapBatch(b []byte) ([]byte, error) {
	n, b, err := readMapLen(b, "batch")
	if err != nil {
		return nil, err
	}
	sawEvents := false
	for range n {
		var key []byte
		if key, b, err = readString(b, "batch key"); err != nil {
			return nil, err
		}
		switch string(key) {
		case "ts":
			b, err = skipNumber(b, "ts")
		case "events":
			if sawEvents {
				return nil, malformed("duplicate events key", nil)
			}
			sawEvents = true
			b, err = d.events(b)
		case "data_parallel_rank", "dp_rank":
			b, err = d.readDpRank(b)
		default:
			b, err = skipField(b, "batch")
		}
		if err != nil {
			return nil, err
		}
	}
	if !sawEvents {
		return nil, malformed("missing events", nil)
	}
	return b, nil
}

func (d *batchDecoder) readDpRank(b []byte) ([]byte, error) {
	if msgp.IsNil(b) {
		d.dpRank = 0
		return b[1:], nil
	}
	v, b, err := readInt(b, "data_parallel_rank")
	if err != nil {
		return nil, err
	}
	if v < 0 || v > math.MaxUint32 {
		return nil, malformed("data_parallel_rank out of range", nil)
	}
	d.dpRank = uint32(v)
	return b, nil
}

func (d *batchDecoder) events(b []byte) ([]byte, error) {
	n, b, err := readArrayLenMax(b, "events", MaxEngineBatchEvents)
	if err != nil {
		return nil, err
	}
	d.out = slices.Grow(d.out[:0], min(n, len(b)/minEventBytes))
	for i := range n {
		var ev rawEvent
		if b, err = d.event(b, &ev); err != nil {
			return nil, atEvent(i, err)
		}
		out, keep, err := d.convert(&ev)
		if err != nil {
			return nil, atEvent(i, err)
		}
		if keep {
			d.out = append(d.out, out)
		}
	}
	return b, nil
}

// rawEvent holds one event's fields as read, before conversion.
type rawEvent struct {
	tag       []byte
	hashes    []uint64 // in batchDecoder.hashes
	hasHashes bool
	parent    uint64
	hasParent bool // parent is set (not nil or absent)
	hasTokens bool // token_ids are in batchDecoder.tokens
	blockSize int64
	hasSize   bool
	medium    []byte // nil: absent or nil
	loraName  []byte // nil: absent or nil; chooses the block seed
	cacheSalt []byte // nil: absent or nil; chooses the block seed
	groupIdx  *int64
	specKind  []byte // nil: absent or nil
}

func (d *batchDecoder) event(b []byte, ev *rawEvent) ([]byte, error) {
	if len(b) > 0 && schemas.IsMsgpackMap(b[0]) {
		return d.mapEvent(b, ev)
	}
	n, b, err := readArrayLen(b, "event")
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, malformed("event array has no tag", nil)
	}
	if ev.tag, b, err = readString(b, "event tag"); err != nil {
		return nil, err
	}
	switch string(ev.tag) {
	case "BlockStored":
		if n < 5 {
			return nil, malformed("BlockStored array too short", nil)
		}
	case "BlockRemoved":
		if n < 2 {
			return nil, malformed("BlockRemoved array too short", nil)
		}
	case "AllBlocksCleared":
	default:
		return nil, malformed("unknown event tag", fmt.Errorf("tag %.40q", ev.tag))
	}
	for pos := 1; pos < n; pos++ {
		switch string(ev.tag) {
		case "BlockStored":
			b, err = d.storedField(ev, pos, b)
		case "BlockRemoved":
			b, err = d.removedField(ev, pos, b)
		default:
			b, err = skipField(b, "event")
		}
		if err != nil {
			return nil, err
		}
	}
	return b, nil
}

// storedField reads position pos of a BlockStored array: vLLM's
// [tag, block_hashes, parent_block_hash, token_ids, block_size, lora_id,
// medium, lora_name, extra_keys] and then a tail read by type (see
// readTail). SGLang stops after lora_id.
func (d *batchDecoder) storedField(ev *rawEvent, pos int, b []byte) ([]byte, error) {
	switch pos {
	case 1:
		return d.readHashes(ev, b)
	case 2:
		return ev.readParent(b)
	case 3:
		return d.readTokens(ev, b)
	case 4:
		return ev.readBlockSize(b)
	case 6:
		return ev.readMedium(b)
	case 7:
		return d.readSeedString(&ev.loraName, b, "lora_name")
	case 9, 10, 11:
		return ev.readTail(b)
	}
	return skipField(b, "event") // lora_id, extra_keys, future fields
}

// removedField reads position pos of [tag, block_hashes, medium, tail...].
func (d *batchDecoder) removedField(ev *rawEvent, pos int, b []byte) ([]byte, error) {
	switch pos {
	case 1:
		return d.readHashes(ev, b)
	case 2:
		return ev.readMedium(b)
	case 3, 4:
		return ev.readTail(b)
	}
	return skipField(b, "event")
}

func (d *batchDecoder) mapEvent(b []byte, ev *rawEvent) ([]byte, error) {
	n, b, err := readMapLen(b, "event")
	if err != nil {
		return nil, err
	}
	for range n {
		var key []byte
		if key, b, err = readString(b, "event key"); err != nil {
			return nil, err
		}
		switch string(key) {
		case "type":
			ev.tag, b, err = readString(b, "type")
		case "block_hashes":
			b, err = d.readHashes(ev, b)
		case "parent_block_hash":
			b, err = ev.readParent(b)
		case "token_ids":
			b, err = d.readTokens(ev, b)
		case "block_size":
			b, err = ev.readBlockSize(b)
		case "medium":
			b, err = ev.readMedium(b)
		case "lora_name":
			b, err = d.readSeedString(&ev.loraName, b, "lora_name")
		case "cache_salt":
			b, err = d.readSeedString(&ev.cacheSalt, b, "cache_salt")
		case "group_idx":
			b, err = ev.readGroupIdx(b)
		case "kv_cache_spec_kind":
			ev.specKind, b, err = readOptString(b, "kv_cache_spec_kind")
		default:
			// lora_id, extra_keys, ... and future keys.
			b, err = skipField(b, "event")
		}
		if err != nil {
			return nil, err
		}
	}
	switch string(ev.tag) {
	case "BlockStored":
		switch {
		case !ev.hasHashes:
			return nil, malformed("missing block_hashes", nil)
		case !ev.hasTokens:
			return nil, malformed("missing token_ids", nil)
		case !ev.hasSize:
			return nil, malformed("missing block_size", nil)
		}
	case "BlockRemoved":
		if !ev.hasHashes {
			return nil, malformed("missing block_hashes", nil)
		}
	case "AllBlocksCleared":
	case "":
		return nil, malformed("missing type", nil)
	default:
		return nil, malformed("unknown event tag", fmt.Errorf("tag %.40q", ev.tag))
	}
	return b, nil
}

// convert turns a read event into an Event; keep is false for the events
// Dynamo drops (other KV-cache groups, self-referencing stores).
func (d *batchDecoder) convert(ev *rawEvent) (out Event, keep bool, err error) {
	switch string(ev.tag) {
	case "AllBlocksCleared":
		return Event{Kind: schemas.KindCleared}, true, nil
	case "BlockRemoved":
		if ev.otherGroup() {
			return Event{}, false, nil
		}
		tier, err := tierOf(ev.medium)
		if err != nil {
			return Event{}, false, err
		}
		return Event{Kind: schemas.KindRemoved, Tier: tier, Removed: ev.hashes}, true, nil
	}
	if ev.otherGroup() {
		return Event{}, false, nil
	}
	tier, err := tierOf(ev.medium)
	if err != nil {
		return Event{}, false, err
	}
	if ev.blockSize <= 0 {
		return Event{}, false, malformed("block_size must be positive", nil)
	}
	if ev.blockSize > int64(d.lim.MaxTokens) {
		return Event{}, false, malformed("block_size too large", nil)
	}
	bs := int(ev.blockSize)
	// Divide rather than multiply: no limit a caller sets can overflow it.
	if len(ev.hashes) > 0 && len(d.tokens)/len(ev.hashes) < bs {
		return Event{}, false, malformed("token_ids do not cover block_hashes",
			fmt.Errorf("%d block hashes of %d tokens, got %d token_ids", len(ev.hashes), bs, len(d.tokens)))
	}
	need := len(ev.hashes) * bs // <= len(d.tokens)
	var parent *uint64
	if ev.hasParent {
		parent = &ev.parent
	}
	if selfReferencing(parent, ev.hashes) {
		return Event{}, false, nil
	}
	n := len(ev.hashes)
	d.local = fillLocalHashes(slices.Grow(d.local[:0], n)[:n], d.tokens[:need], bs,
		BlockSeed(string(ev.loraName), string(ev.cacheSalt)))
	at := len(d.blocks)
	for i, h := range ev.hashes {
		d.blocks = append(d.blocks, Block{ExternalHash: h, LocalHash: d.local[i]})
	}
	out = Event{Kind: schemas.KindStored, Tier: tier, Blocks: d.blocks[at:len(d.blocks):len(d.blocks)]}
	if n == 0 {
		out.Blocks = []Block{} // empty, not nil, as it always was (allocates nothing)
	}
	if ev.hasParent {
		d.parents = append(d.parents, ev.parent)
		out.ParentHash = &d.parents[len(d.parents)-1]
	}
	return out, true, nil
}

// otherGroup mirrors Dynamo's KvCacheEventFilter::should_ignore.
func (ev *rawEvent) otherGroup() bool {
	if ev.specKind != nil {
		switch string(ev.specKind) {
		case "full_attention", "mla_attention", "sink_full_attention":
			return false
		}
		return true
	}
	return ev.groupIdx != nil && *ev.groupIdx != 0
}

// selfReferencing reports a repeated hash among parent and hashes, which
// Dynamo's convert_event drops rather than index a cycle.
func selfReferencing(parent *uint64, hashes []uint64) bool {
	if len(hashes) <= 16 {
		for i, h := range hashes {
			if parent != nil && h == *parent {
				return true
			}
			for _, g := range hashes[:i] {
				if g == h {
					return true
				}
			}
		}
		return false
	}
	seen := make(map[uint64]struct{}, len(hashes)+1)
	if parent != nil {
		seen[*parent] = struct{}{}
	}
	for _, h := range hashes {
		if _, dup := seen[h]; dup {
			return true
		}
		seen[h] = struct{}{}
	}
	return false
}

// tierOf maps a medium as Dynamo's StorageTier::from_kv_medium
// (lib/kv-router/src/protocols.rs); the device tier is "", as in
// FromRouterEvent.
func tierOf(medium []byte) (schemas.StorageTier, error) {
	if medium == nil {
		return "", nil
	}
	switch string(medium) {
	case "GPU", "DEVICE":
		return "", nil
	case "CPU", "CPU_PINNED", "CPU_TIER1":
		return schemas.TierHostPinned, nil
	case "CPU_TIER2", "DISK", "NVME", "STORAGE":
		return schemas.TierDisk, nil
	case "EXTERNAL", "NETWORK", "REMOTE", "SHARED":
		return schemas.TierExternal, nil
	}
	// Not malformed: the index counts and ignores an unknown tier
	// (ErrUnknownTier). Dynamo's from_kv_medium_or_default would take it
	// for the device tier; crediting unknown blocks as device ones could
	// send hints where the router does not go, so they are left out.
	if !utf8.Valid(medium) {
		return "", malformed("invalid UTF-8 medium", nil)
	}
	return schemas.StorageTier("medium:" + string(medium[:min(len(medium), 40)])), nil
}

func (d *batchDecoder) readHashes(ev *rawEvent, b []byte) ([]byte, error) {
	n, b, err := readArrayLenMax(b, "block_hashes", d.lim.MaxTokens)
	if err != nil {
		return nil, err
	}
	ev.hashes = nil
	if n > 0 {
		// n <= len(b) (readArrayLenMax): 8 bytes per input byte at most.
		at := len(d.hashes)
		d.hashes = slices.Grow(d.hashes, n)[:at+n]
		ev.hashes = d.hashes[at : at+n : at+n]
	}
	for i := range ev.hashes {
		if ev.hashes[i], b, err = readHash(b, "block_hashes"); err != nil {
			return nil, err
		}
	}
	ev.hasHashes = true
	return b, nil
}

func (ev *rawEvent) readParent(b []byte) ([]byte, error) {
	ev.hasParent = false
	if msgp.IsNil(b) {
		return b[1:], nil
	}
	h, b, err := readHash(b, "parent_block_hash")
	if err != nil {
		return nil, err
	}
	ev.parent, ev.hasParent = h, true
	return b, nil
}

// readTokens reads token_ids into d.tokens; each must be a u32, as in
// Dynamo's Vec<u32>. (EAGLE's [[a, b], ...] bigram form is not accepted.)
func (d *batchDecoder) readTokens(ev *rawEvent, b []byte) ([]byte, error) {
	n, b, err := readArrayLenMax(b, "token_ids", d.lim.MaxTokens)
	if err != nil {
		return nil, err
	}
	// n <= len(b) (readArrayLen), so this grows by at most 4 bytes per
	// input byte. The loop writes by index into a local slice: appending
	// to d.tokens would load and store its header through d per token.
	toks := slices.Grow(d.tokens[:0], n)[:n]
	for k := range toks {
		// Python encoders write a token id as the smallest unsigned form:
		// fixint, uint8, uint16 or uint32. Read those inline.
		switch {
		case len(b) >= 1 && b[0] < 0x80:
			toks[k] = uint32(b[0])
			b = b[1:]
		case len(b) >= 3 && b[0] == 0xcd:
			toks[k] = uint32(b[1])<<8 | uint32(b[2])
			b = b[3:]
		case len(b) >= 5 && b[0] == 0xce:
			toks[k] = binary.BigEndian.Uint32(b[1:])
			b = b[5:]
		case len(b) >= 2 && b[0] == 0xcc:
			toks[k] = uint32(b[1])
			b = b[2:]
		default:
			var t int64
			if t, b, err = readInt(b, "token_ids"); err != nil {
				d.tokens = toks[:0]
				return nil, err
			}
			if t < 0 || t > math.MaxUint32 {
				d.tokens = toks[:0]
				return nil, malformed("token id out of range", nil)
			}
			toks[k] = uint32(t)
		}
	}
	d.tokens = toks
	ev.hasTokens = true
	return b, nil
}

func (ev *rawEvent) readBlockSize(b []byte) ([]byte, error) {
	v, b, err := readInt(b, "block_size")
	if err != nil {
		return nil, err
	}
	ev.blockSize, ev.hasSize = v, true
	return b, nil
}

func (ev *rawEvent) readMedium(b []byte) ([]byte, error) {
	var err error
	ev.medium, b, err = readOptString(b, "medium")
	return b, err
}

// readSeedString reads lora_name or cache_salt, a str or nil, into *dst;
// one longer than MaxString is malformed, as a request's would be.
func (d *batchDecoder) readSeedString(dst *[]byte, b []byte, field string) ([]byte, error) {
	s, b, err := readOptString(b, field)
	if err != nil {
		return nil, err
	}
	if len(s) > d.lim.MaxString {
		return nil, malformed(field+" too long", fmt.Errorf("%d bytes, limit %d", len(s), d.lim.MaxString))
	}
	*dst = s
	return b, nil
}

func (ev *rawEvent) readGroupIdx(b []byte) ([]byte, error) {
	ev.groupIdx = nil
	if msgp.IsNil(b) {
		return b[1:], nil
	}
	v, b, err := readInt(b, "group_idx")
	if err != nil {
		return nil, err
	}
	ev.groupIdx = &v
	return b, nil
}

// readTail reads one element of the positional tail by its type, as
// Dynamo's zmq_wire does: the first integer is group_idx, a string is
// kv_cache_spec_kind, anything else (block_mm_infos, nil) is skipped.
func (ev *rawEvent) readTail(b []byte) ([]byte, error) {
	switch t := msgp.NextType(b); {
	case t == msgp.StrType:
		s, rest, err := readString(b, "kv_cache_spec_kind")
		if err == nil {
			ev.specKind = s
		}
		return rest, err
	case (t == msgp.IntType || t == msgp.UintType) && ev.groupIdx == nil && ev.specKind == nil:
		return ev.readGroupIdx(b)
	}
	return skipField(b, "event")
}
