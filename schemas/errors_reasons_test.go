package schemas

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestCommonDecodeReasons: the reasons listed are the ones the decoders
// give for inputs broken before any field is read, so the series listed
// at 0 are the ones that move.
func TestCommonDecodeReasons(t *testing.T) {
	lim := Limits{MaxBytes: 64}
	for _, in := range [][]byte{
		[]byte(strings.Repeat(" ", 100)), // message too large
		{0xc1},                           // neither JSON nor a msgpack map
		[]byte(`{"request_id":`),         // invalid JSON
		[]byte(`{"request_id":"a"}` + "\xff"),
	} {
		_, err := lim.DecodeRequest(in, "")
		var de *DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("%q: %v, want a DecodeError", in, err)
		}
		if !slices.Contains(CommonDecodeReasons, de.Reason) {
			t.Errorf("%q: reason %q is not in CommonDecodeReasons", in, de.Reason)
		}
	}
}
