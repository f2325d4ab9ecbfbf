package kvevents

// Bounded msgpack readers for the engine-batch adapter: each checks a
// header against the bytes left before trusting it, and a skipped value
// goes through schemas.SkipMsgpack, the one bounded walk.

import (
	"errors"
	"fmt"

	"github.com/tinylib/msgp/msgp"

	"github.com/hintstream/hintstream/schemas"
)

func skipField(b []byte, field string) ([]byte, error) {
	rest, err := schemas.SkipMsgpack(b, maxSkipDepth)
	if err != nil {
		return nil, readErr(field, err)
	}
	return rest, nil
}

// The msgpack readers below turn msgp's errors into DecodeErrors that name
// the field. Array and map headers are checked against the bytes after
// them (every element takes at least one byte) before anyone allocates.

func readArrayLen(b []byte, field string) (int, []byte, error) {
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return 0, nil, readErr(field, err)
	}
	if uint64(n) > uint64(len(rest)) {
		return 0, nil, readErr(field, msgp.ErrShortBytes)
	}
	return int(n), rest, nil
}

// readArrayLenMax is readArrayLen for an array bounded by max: a longer
// claim is "too many <field>" whether or not the bytes could back it.
func readArrayLenMax(b []byte, field string, max int) (int, []byte, error) {
	n, rest, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return 0, nil, readErr(field, err)
	}
	if uint64(n) > uint64(max) {
		return 0, nil, malformed("too many "+field, nil)
	}
	if uint64(n) > uint64(len(rest)) {
		return 0, nil, readErr(field, msgp.ErrShortBytes)
	}
	return int(n), rest, nil
}

func readMapLen(b []byte, field string) (int, []byte, error) {
	n, rest, err := msgp.ReadMapHeaderBytes(b)
	if err != nil {
		return 0, nil, readErr(field, err)
	}
	if 2*uint64(n) > uint64(len(rest)) {
		return 0, nil, readErr(field, msgp.ErrShortBytes)
	}
	return int(n), rest, nil
}

// readString reads a msgpack str without copying; msgspec never encodes a
// str field as bin.
func readString(b []byte, field string) ([]byte, []byte, error) {
	s, rest, err := msgp.ReadStringZC(b)
	if err != nil {
		return nil, nil, readErr(field, err)
	}
	if s == nil {
		s = []byte{} // present but empty, unlike an absent field
	}
	return s, rest, nil
}

// readOptString reads a str or nil (returned as nil).
func readOptString(b []byte, field string) ([]byte, []byte, error) {
	if msgp.IsNil(b) {
		return nil, b[1:], nil
	}
	return readString(b, field)
}

func readInt(b []byte, field string) (int64, []byte, error) {
	v, rest, err := msgp.ReadInt64Bytes(b)
	if err != nil {
		return 0, nil, readErr(field, err)
	}
	return v, rest, nil
}

// readHash reads one block hash as Dynamo's BlockHashValue does
// (lib/kv-router/src/zmq_wire/types.rs): a signed int is taken as its u64
// two's complement (SGLang's i64 page hashes), an unsigned int as is.
//
// Bytes are vLLM's raw digest (VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES=0,
// e.g. 32-byte sha256). Upstream Dynamo main rejects them; a Dynamo variant
// of zmq_wire.rs (block_hash_bytes_to_u64) folds them to the last 8 bytes
// big-endian, zero-padded on the left when shorter. That is also exactly
// the integer vLLM sends for the same block in int mode
// (kv_cache_utils.maybe_convert_block_hash: int.from_bytes(h, "big") &
// (2**64-1)), so one block has one name whichever way the engine is set.
func readHash(b []byte, field string) (uint64, []byte, error) {
	if len(b) == 0 {
		return 0, nil, readErr(field, msgp.ErrShortBytes)
	}
	switch lead := b[0]; {
	case lead == 0xcf: // uint64, may exceed int64
		v, rest, err := msgp.ReadUint64Bytes(b)
		if err != nil {
			return 0, nil, readErr(field, err)
		}
		return v, rest, nil
	case lead >= 0xc4 && lead <= 0xc6: // bin 8/16/32
		raw, rest, err := msgp.ReadBytesZC(b)
		if err != nil {
			return 0, nil, readErr(field, err)
		}
		if len(raw) == 0 {
			return 0, nil, malformed("empty bytes hash in "+field, nil)
		}
		var v uint64
		for _, c := range raw[max(0, len(raw)-8):] {
			v = v<<8 | uint64(c)
		}
		return v, rest, nil
	}
	v, rest, err := readInt(b, field)
	return uint64(v), rest, err
}

// skipNumber skips the batch's ts, an f64 (any msgpack number is taken).
func skipNumber(b []byte, field string) ([]byte, error) {
	switch msgp.NextType(b) {
	case msgp.Float64Type, msgp.Float32Type, msgp.IntType, msgp.UintType:
		return skipField(b, field)
	case msgp.InvalidType:
		if len(b) == 0 {
			return nil, readErr(field, msgp.ErrShortBytes)
		}
		return nil, malformed("invalid msgpack", nil)
	}
	return nil, malformed("wrong type for "+field, nil)
}

// maxSkipDepth bounds the nesting of a skipped value (extra_keys,
// unknown fields), as schemas.Limits.MaxDepth bounds our own events'.
const maxSkipDepth = 32

func malformed(reason string, err error) error {
	return &schemas.DecodeError{Kind: engineBatchKind, Reason: reason, Err: err}
}

// readErr names a msgp error for a field; the reason stays a short,
// bounded label.
func readErr(field string, err error) error {
	if errors.Is(err, schemas.ErrMsgpackTooDeep) {
		return malformed(schemas.ErrMsgpackTooDeep.Error(), fmt.Errorf("%s: %w", field, err))
	}
	if errors.Is(err, msgp.ErrShortBytes) {
		return malformed("truncated msgpack", fmt.Errorf("%s: %w", field, err))
	}
	var (
		te msgp.TypeError
		ue msgp.UintBelowZero
		uo msgp.UintOverflow
		io msgp.IntOverflow
	)
	switch {
	case errors.As(err, &te):
		return malformed("wrong type for "+field, err)
	case errors.As(err, &ue), errors.As(err, &uo), errors.As(err, &io):
		return malformed("number out of range for "+field, err)
	}
	return malformed("invalid msgpack", fmt.Errorf("%s: %w", field, err))
}

// atEvent adds the event's index to a DecodeError's detail, not its Reason.
func atEvent(i int, err error) error {
	var de *schemas.DecodeError
	if !errors.As(err, &de) {
		return malformed("invalid event", fmt.Errorf("event %d: %w", i, err))
	}
	detail := fmt.Errorf("event %d", i)
	if de.Err != nil {
		detail = fmt.Errorf("event %d: %w", i, de.Err)
	}
	return &schemas.DecodeError{Kind: de.Kind, Reason: de.Reason, Err: detail}
}
