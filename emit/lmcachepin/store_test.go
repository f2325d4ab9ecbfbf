package lmcachepin

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

func TestDecodeRecord(t *testing.T) {
	good := Record{Slot: "session:s", Trigger: "r", Instance: "i", Location: "LocalCPUBackend", UntilMs: 5, Tokens: packTokens([]uint32{1, 1 << 31, 7})}
	b, _ := json.Marshal(good)
	r, err := decodeRecord(b)
	if err != nil || !slices.Equal(unpackTokens(r.Tokens), []uint32{1, 1 << 31, 7}) || r.Slot != good.Slot {
		t.Fatalf("decoded %+v, %v", r, err)
	}
	for name, bad := range map[string]string{
		"not json":     `{`,
		"no slot":      `{"trigger":"r","instance":"i","location":"l"}`,
		"odd tokens":   `{"slot":"s","trigger":"r","instance":"i","location":"l","tokens":"AAAA"}`,
		"tokens typed": `{"slot":"s","trigger":"r","instance":"i","location":"l","tokens":[1,2]}`,
	} {
		if _, err := decodeRecord([]byte(bad)); !errors.Is(err, errBadRecord) {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// FuzzDecodeRecord: any stored bytes decode to a record a Holder can use
// (whole tokens, the required fields) or are refused; never a panic.
func FuzzDecodeRecord(f *testing.F) {
	b, _ := json.Marshal(Record{Slot: "s", Trigger: "t", Instance: "i", Location: "l", UntilMs: 1, Tokens: packTokens([]uint32{3})})
	f.Add(b)
	f.Add([]byte(`{"slot":"s"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, errBadRecord) {
				t.Fatalf("error %v does not wrap errBadRecord", err)
			}
			return
		}
		if r.Slot == "" || len(r.Tokens)%4 != 0 || len(unpackTokens(r.Tokens)) > maxStoredTokens {
			t.Fatalf("accepted %+v", r)
		}
	})
}
