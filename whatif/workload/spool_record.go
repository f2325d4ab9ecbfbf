package workload

import (
	"encoding/binary"
	"math/bits"
	"time"
)

// spoolRec is one request as a spooled workload keeps it: a fixed-size
// little-endian record at offset index×recSize of the requests file, so
// any request is one ReadAt away and a field of an earlier one (its Next,
// its session's last request) is patched in place with one WriteAt.
type spoolRec struct {
	at, in, out int64 // At in ns; input and output lengths
	prev, next  int64
	// chainPrev is the previous request whose full-block prefix has the
	// same key as this one's: the linker keeps only the latest request
	// per key in memory and walks older candidates through this.
	chainPrev int64
	// key2 is a second, independent key of the full-block prefix: the
	// ids are not kept, so a candidate counts as having the same prefix
	// when both keys match (only a 128-bit collision could link what
	// FromRecords, comparing ids, would not).
	key2 uint64
	// key1 is the full-block prefix's first key (the linker's map key),
	// so that linking a request as this one's next turn finds its entry.
	key1 uint64
	// root is the conversation's first request (Session "s-<root>");
	// last, kept on the root only, is the conversation's latest request.
	root, last, turn               int64
	responseAt, wakeupAt, toolTime int64
	src                            SourceRef
	fork, toolCall, hasWakeup      bool
	// finishKnown: the trace gave the finish (toolCall is then its);
	// tool is the tool's index in the spool's names (0: unnamed);
	// predicted the tool time predicted at the call; signal how the
	// wake-up was decided (sig*).
	finishKnown bool
	tool        uint32
	predicted   int64
	signal      uint8
}

// Field offsets in a record; a patch writes one 8-byte field.
const (
	offAt       = 0
	offIn       = 8
	offOut      = 16
	offPrev     = 24
	offNext     = 32
	offChain    = 40
	offKey2     = 48
	offRoot     = 56
	offLast     = 64
	offTurn     = 72
	offResponse = 80
	offWakeup   = 88
	offToolTime = 96
	offSrcAt    = 104
	offSrcLen   = 112
	offSrcIDs   = 116
	offFlags    = 120
	offKey1     = 128
	offPredict  = 136
	offTool     = 144
	offSignal   = 148
	recSize     = 152
)

const (
	flagFork = 1 << iota
	flagToolCall
	flagHasWakeup
	flagFinishKnown
)

var le = binary.LittleEndian

func (r *spoolRec) encode(b *[recSize]byte) {
	for _, f := range [...]struct {
		off int
		v   int64
	}{{offAt, r.at}, {offIn, r.in}, {offOut, r.out}, {offPrev, r.prev}, {offNext, r.next},
		{offChain, r.chainPrev}, {offKey2, int64(r.key2)}, {offRoot, r.root}, {offLast, r.last},
		{offTurn, r.turn}, {offResponse, r.responseAt}, {offWakeup, r.wakeupAt},
		{offToolTime, r.toolTime}, {offSrcAt, r.src.At}} {
		le.PutUint64(b[f.off:], uint64(f.v))
	}
	le.PutUint32(b[offSrcLen:], uint32(r.src.Len))
	le.PutUint32(b[offSrcIDs:], uint32(r.src.IDs))
	var fl byte
	if r.fork {
		fl |= flagFork
	}
	if r.toolCall {
		fl |= flagToolCall
	}
	if r.hasWakeup {
		fl |= flagHasWakeup
	}
	if r.finishKnown {
		fl |= flagFinishKnown
	}
	clear(b[offFlags:offKey1])
	b[offFlags] = fl
	le.PutUint64(b[offKey1:], r.key1)
	le.PutUint64(b[offPredict:], uint64(r.predicted))
	le.PutUint32(b[offTool:], r.tool)
	clear(b[offSignal:recSize])
	b[offSignal] = r.signal
}

func (r *spoolRec) decode(b *[recSize]byte) {
	i := func(off int) int64 { return int64(le.Uint64(b[off:])) }
	*r = spoolRec{at: i(offAt), in: i(offIn), out: i(offOut), prev: i(offPrev), next: i(offNext),
		chainPrev: i(offChain), key2: le.Uint64(b[offKey2:]), key1: le.Uint64(b[offKey1:]), root: i(offRoot), last: i(offLast),
		turn: i(offTurn), responseAt: i(offResponse), wakeupAt: i(offWakeup), toolTime: i(offToolTime),
		src:  SourceRef{At: i(offSrcAt), Len: int32(le.Uint32(b[offSrcLen:])), IDs: int32(le.Uint32(b[offSrcIDs:]))},
		fork: b[offFlags]&flagFork != 0, toolCall: b[offFlags]&flagToolCall != 0,
		hasWakeup: b[offFlags]&flagHasWakeup != 0, finishKnown: b[offFlags]&flagFinishKnown != 0,
		predicted: i(offPredict), tool: le.Uint32(b[offTool:]), signal: b[offSignal]}
}

// evSize is an event's record in the events file: At (ns), then the
// request index shifted left 8 bits with the kind in the low byte.
const evSize = 16

func encodeEvent(b []byte, e Event) {
	le.PutUint64(b, uint64(e.At))
	le.PutUint64(b[8:], uint64(e.Request)<<8|uint64(e.Kind))
}

func decodeEvent(b []byte) Event {
	v := le.Uint64(b[8:])
	return Event{At: time.Duration(int64(le.Uint64(b))), Kind: Kind(v & 0xff), Request: int(v >> 8)}
}

// appendPrefixKeys2 is prefixKeys with an independent mix (xxHash64's
// round and avalanche, with the prefix length folded in): the second key
// that stands in for comparing ids on disk.
func appendPrefixKeys2(dst []uint64, ids []uint64) []uint64 {
	const p1, p2, p3 = 0x9e3779b185ebca87, 0xc2b2ae3d27d4eb4f, 0x165667b19e3779f9
	acc := uint64(p3)
	for i, id := range ids {
		acc = bits.RotateLeft64(acc+id*p2, 31) * p1
		h := acc ^ uint64(i+1)*p3
		h ^= h >> 33
		h *= p2
		h ^= h >> 29
		h *= p3
		h ^= h >> 32
		dst = append(dst, h)
	}
	return dst
}
