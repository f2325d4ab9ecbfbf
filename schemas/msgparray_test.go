package schemas

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/tinylib/msgp/msgp"
)

// appendUint32sAsGenerated is what msgp's generated MarshalMsg writes for
// a []uint32 field (PrefetchPayload.TokenIDs in envelope_gen.go).
func appendUint32sAsGenerated(b []byte, vs []uint32) []byte {
	b = msgp.AppendArrayHeader(b, uint32(len(vs)))
	for _, v := range vs {
		b = msgp.AppendUint32(b, v)
	}
	return b
}

func checkUint32Array(t *testing.T, prefix []byte, vs []uint32) {
	t.Helper()
	want := appendUint32sAsGenerated(bytes.Clone(prefix), vs)
	got := AppendUint32Array(bytes.Clone(prefix), vs)
	if !bytes.Equal(got, want) {
		t.Fatalf("%d values after %d bytes: %d bytes, want %d (first difference at %d)", len(vs), len(prefix), len(got), len(want), firstDiff(got, want))
	}
	var back []uint32
	if err := decodeUint32s(got[len(prefix):], &back); err != nil || len(back) != len(vs) {
		t.Fatalf("decode: %v, %d values of %d", err, len(back), len(vs))
	}
}

func decodeUint32s(b []byte, out *[]uint32) error {
	n, b, err := msgp.ReadArrayHeaderBytes(b)
	if err != nil {
		return err
	}
	for range n {
		var v uint32
		if v, b, err = msgp.ReadUint32Bytes(b); err != nil {
			return err
		}
		*out = append(*out, v)
	}
	return nil
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestAppendUint32ArrayAsGenerated: the bulk encoder writes the bytes of
// the generated one at every width's edges, at the array header's
// (fixarray, array16, array32) and over random values, after a prefix.
func TestAppendUint32ArrayAsGenerated(t *testing.T) {
	edges := []uint32{0, 1, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 1<<31 - 1, 1 << 31, math.MaxUint32}
	checkUint32Array(t, nil, nil)
	checkUint32Array(t, []byte{0x81, 0xa1, 'x'}, edges)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 15, 16, math.MaxUint16, math.MaxUint16 + 1, 200_000} {
		vs := make([]uint32, n)
		for i := range vs {
			// Every width about as often.
			vs[i] = rng.Uint32() >> (8 * rng.IntN(4))
		}
		checkUint32Array(t, []byte{0xc0}, vs)
	}
}

// TestAppendUint32ArrayMatchesVector: the token ids of the shared
// kv_hints_envelope vector encode as the vector has them.
func TestAppendUint32ArrayMatchesVector(t *testing.T) {
	vec := readVector(t, "kv_hints_envelope.msgpack")
	tokens := make([]uint32, 64)
	for i := range tokens {
		tokens[i] = uint32(i)
	}
	want := AppendUint32Array(append([]byte{0xa9}, "token_ids"...), tokens)
	if !bytes.Contains(vec, want) {
		t.Fatalf("the vector does not hold token_ids 0..63 as %x", want)
	}
}

// FuzzAppendUint32Array: any values (the input read as little-endian
// uint32s, after a prefix of its first byte's length) encode as the
// generated code encodes them.
func FuzzAppendUint32Array(f *testing.F) {
	f.Add([]byte{0, 0x7f, 0, 0, 0, 0x80, 0, 0, 0})
	f.Add([]byte{3, 1, 2, 3, 0xff, 0xff, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		n := min(int(data[0]), len(data)-1)
		prefix, rest := data[1:1+n], data[1+n:]
		vs := make([]uint32, len(rest)/4)
		for i := range vs {
			vs[i] = binary.LittleEndian.Uint32(rest[4*i:])
		}
		checkUint32Array(t, prefix, vs)
	})
}
