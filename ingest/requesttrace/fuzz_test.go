package requesttrace

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/schemas"
)

// FuzzDecode: any bytes either decode to a record within the bounds or
// fail with a DecodeError; never a panic.
func FuzzDecode(f *testing.F) {
	turn := agentTurn()
	for _, r := range []*dynamotrace.Record{turn.RequestEnd(), turn.RequestPayload([]byte(`[{"role":"user"}]`), nil),
		dynamotrace.Tool(ToolEnd, "s", "c", "x", 1, 9)} {
		b, _ := dynamotrace.Marshal(r)
		f.Add(b)
		f.Add(append(append([]byte(`{"timestamp":3,"event":`), b...), '}'))
	}
	f.Add([]byte(`{"schema":"dynamo.request.trace.v1","event_type":"request_end","event_time_unix_ms":1,"request":{"request_id":"r","replay":{"trace_block_size":1,"input_length":2,"input_sequence_hashes":[1, 2]}}}`))
	lim := Limits{MaxHashes: 64, MaxString: 256}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := lim.DecodeLine(data)
		if err != nil {
			if !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("error %v is not a DecodeError", err)
			}
			return
		}
		if r.Schema != Schema {
			t.Fatalf("accepted schema %q", r.Schema)
		}
		switch {
		case r.EventType == RequestEnd:
			if r.Request == nil || r.Request.RequestID == "" || len(r.Request.RequestID) > 256 {
				t.Fatalf("request_end out of bounds: %+v", r.Request)
			}
			if rp := r.Request.Replay; rp != nil && (len(rp.Hashes) > 64 || rp.TraceBlockSize == 0 || len(rp.Full()) > len(rp.Hashes)) {
				t.Fatalf("replay out of bounds: %+v", rp)
			}
			_ = r.Response()
		case r.IsTool():
			if r.Tool == nil || r.Tool.ToolClass == "" || r.Tool.DurationMs < 0 || r.AgentRecord() == nil {
				t.Fatalf("tool out of bounds: %+v", r.Tool)
			}
		case r.EventType == RequestPayload:
			if r.Payload == nil {
				t.Fatal("payload missing")
			}
			_ = r.Payload.Trigger()
		default:
			t.Fatalf("accepted event type %q", r.EventType)
		}
	})
}
