package kvevents

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/schemas"
)

// FuzzDecode feeds arbitrary bytes, under each kind of KV subject and
// with any content type and bridge headers, to Decode: none may panic,
// every refusal must be a malformed-input error (to be counted and
// dead-lettered), and a Decoder reused across messages (as consumers.ApplyKV's
// pooled ones are) must answer exactly as a fresh one.
func FuzzDecode(f *testing.F) {
	f.Add(uint8(0), []byte(`{"worker_id":7,"event":{"event_id":1,"data":{"cleared":null}}}`), "", "")
	f.Add(uint8(0), []byte(`{"worker_id":7,"event":{"event_id":2,"data":{"stored":{"parent_hash":null,"blocks":[{"block_hash":5,"tokens_hash":6}]}}}}`), "application/json", "")
	f.Add(uint8(1), []byte(`{"worker_id":3,"event":{"event_id":1,"data":{"removed":{"block_hashes":[5]}}}}`), "", "")
	f.Add(uint8(0), engBatch(engArr{"BlockStored", engArr{1, 2}, nil, engTokens(8, 100), 4, nil}), "", "12")
	f.Add(uint8(0), engBatch(engArr{"BlockRemoved", engArr{1}, "CPU"}), "application/msgpack", "x")
	f.Add(uint8(0), []byte{0x85}, "", "")
	files, _ := filepath.Glob("../ingest/eventplane/testdata/kv_*.msgpack")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(uint8(2), b, "", "")
		}
	}
	subjects := []string{"kv.events.7", "kv.events",
		eventplane.Scope{Namespace: "ns", Component: "comp"}.Subject(eventplane.TopicKVEvents)}
	reused := &Decoder{}
	f.Fuzz(func(t *testing.T, which uint8, data []byte, contentType, seq string) {
		m := Message{Subject: subjects[int(which)%len(subjects)], Data: data,
			Header: map[string][]string{"Content-Type": {contentType}, schemas.HeaderBridgeSeq: {seq}, schemas.HeaderBridgeEpoch: {seq}}}
		fresh, err := new(Decoder).Decode(m)
		if err != nil && !errors.Is(err, schemas.ErrMalformed) {
			t.Fatalf("%s: %v is not ErrMalformed", m.Subject, err)
		}
		got, rerr := reused.Decode(m)
		if (err == nil) != (rerr == nil) || err != nil && err.Error() != rerr.Error() {
			t.Fatalf("reused decoder: %v; fresh: %v", rerr, err)
		}
		if !sameEvents(fresh.Events, got.Events) ||
			fresh.Epoch != got.Epoch || fresh.Ignored != got.Ignored || (fresh.Envelope == nil) != (got.Envelope == nil) ||
			fresh.Envelope != nil && !reflect.DeepEqual(*fresh.Envelope, *got.Envelope) {
			t.Fatalf("reused decoder gave %+v; fresh %+v", got, fresh)
		}
		if err == nil && fresh.Envelope != nil && len(fresh.Events) != 1 {
			t.Fatalf("event-plane frame decoded to %d events, want 1", len(fresh.Events))
		}
	})
}
