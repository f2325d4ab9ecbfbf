package schemas

import (
	"fmt"
	"reflect"
	"testing"
)

// sameInto decodes data with DecodeRouterEvent and with
// DecodeRouterEventInto into *reused (left holding the previous decode)
// and fails unless both give the same value and error.
func sameInto(t *testing.T, l Limits, data []byte, reused *RouterEvent) {
	t.Helper()
	want, werr := l.DecodeRouterEvent(data)
	gerr := l.DecodeRouterEventInto(data, reused)
	if fmt.Sprint(gerr) != fmt.Sprint(werr) || (werr == nil && !reflect.DeepEqual(*reused, *want)) {
		t.Fatalf("%q:\ninto %+v, %v\nwant %+v, %v", data, *reused, gerr, want, werr)
	}
}

// TestDecodeRouterEventInto decodes a run of events of every kind and
// shape, fast and slow path, valid and not, into one reused RouterEvent:
// each must come out as a fresh DecodeRouterEvent would, with nothing of
// the one before.
func TestDecodeRouterEventInto(t *testing.T) {
	ev := func(data string) string {
		return `{"worker_id":7,"event":{"event_id":5,"data":` + data + `,"dp_rank":1}}`
	}
	inputs := []string{
		ev(`{"stored":{"parent_hash":9002,"start_position":32,"blocks":[{"block_hash":9003,"tokens_hash":1},{"block_hash":4,"tokens_hash":5}]}}`),
		ev(`{"stored":{"parent_hash":null,"blocks":[{"block_hash":1,"tokens_hash":2}]}}`),
		ev(`{"stored":{"blocks":[]}}`),
		ev(`{"stored":{}}`),
		ev(`{"stored":{"parent_hash":-1,"start_position":null,"blocks":[{"block_hash":1,"tokens_hash":2},{"block_hash":3,"tokens_hash":4},{"block_hash":5,"tokens_hash":6}]}}`),
		ev(`{"removed":{"block_hashes":[18446744073709551615,-2]}}`),
		ev(`{"removed":{"block_hashes":[]}}`),
		ev(`{"removed":{}}`),
		ev(`{"removed":{"block_hashes":[1,2,3,4]}}`),
		ev(`"cleared"`),
		`{"storage_tier":"host_pinned","event":{"data":"cleared"},"worker_id":18446744073709551615}`,
		ev(`{"stored":{"blocks":[{"block_hash":1,"tokens_hash":2,"mm_extra_info":{"mm_objects":[]}}]}}`), // slow path
		ev(`{"stored":{"parent_hash":77,"blocks":[{"block_hash":1,"block_hash":2}]}}`),                   // slow path
		`{"worker_id":7,"event":{"event_id":1}}`,                                                         // missing data
		`{"worker_id":7,"event":{"data":{"stored":{"parent_hash":5,"blocks":[{"block_hash":1,`,           // truncated
		ev(`{"stored":{"parent_hash":6,"start_position":1,"blocks":[{"block_hash":1,"tokens_hash":2}]}}`),
		string(benchRouterEvent()),
	}
	for _, l := range []Limits{{}, {MaxTokens: 2, MaxDepth: 6}} {
		var reused RouterEvent
		for range 2 {
			for _, in := range inputs {
				sameInto(t, l, []byte(in), &reused)
			}
		}
	}
}

// FuzzDecodeRouterEventInto holds DecodeRouterEventInto, starting from a
// decoded stored and a decoded removed event, to DecodeRouterEvent.
func FuzzDecodeRouterEventInto(f *testing.F) {
	for _, line := range routerEventLines(f) {
		f.Add(line)
	}
	f.Add(benchRouterEvent())
	f.Add([]byte(`{"worker_id":7,"event":{"event_id":5,"data":{"removed":{"block_hashes":[1,2]}},"dp_rank":1}}`))
	stored := []byte(`{"worker_id":7,"event":{"event_id":5,"data":{"stored":{"parent_hash":1,"start_position":3,` +
		`"blocks":[{"block_hash":1,"tokens_hash":2},{"block_hash":3,"tokens_hash":4}]}}}}`)
	removed := []byte(`{"worker_id":7,"event":{"event_id":5,"data":{"removed":{"block_hashes":[1,2,3]}}}}`)
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, prev := range [][]byte{stored, removed} {
			var reused RouterEvent
			if err := fuzzLimits.DecodeRouterEventInto(prev, &reused); err != nil {
				t.Fatal(err)
			}
			sameInto(t, fuzzLimits, data, &reused)
		}
	})
}
