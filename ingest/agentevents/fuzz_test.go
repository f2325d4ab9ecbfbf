package agentevents

import (
	"errors"
	"testing"

	"github.com/hintstream/hintstream/schemas"
)

// FuzzDecode: any bytes either decode to a record within the bounds or
// fail with a DecodeError; never a panic.
func FuzzDecode(f *testing.F) {
	f.Add(pack(f, toolRecord(ToolEnd, func(_, tool map[string]any) { tool["duration_ms"] = 12.5 })), "")
	f.Add([]byte(`{"schema":"dynamo.agent.trace.v1","event_type":"tool_start","event_time_unix_ms":1,"event_source":"harness","agent_context":{"workflow_type_id":"t","workflow_id":"w","program_id":"p"},"tool":{"tool_call_id":"c","tool_class":"x"}}`), "application/json")
	f.Add([]byte{0x81, 0xa1, 'a', 0x91, 0x91, 0xc0}, "")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		r, err := Decode(data, ct)
		if err != nil {
			if !errors.Is(err, schemas.ErrMalformed) {
				t.Fatalf("error %v is not a DecodeError", err)
			}
			return
		}
		if r.Tool.ToolClass == "" || len(r.Tool.ToolClass) > MaxString || r.AgentContext.ProgramID == "" ||
			r.Schema != SchemaV1 || !(r.EventType == ToolStart || r.Terminal()) || r.Tool.DurationMs < 0 {
			t.Fatalf("accepted a record out of bounds: %+v", r)
		}
	})
}

// FuzzParseFrame: three fuzzed frames never panic the frame reader.
func FuzzParseFrame(f *testing.F) {
	f.Add([]byte("topic"), seqFrame(1), pack(f, toolRecord(ToolStart, nil)))
	f.Add([]byte{}, []byte{1, 2}, []byte{0xc1})
	f.Fuzz(func(t *testing.T, topic, seq, rec []byte) {
		fr, err := ParseFrame([][]byte{topic, seq, rec})
		if err == nil && (len(seq) != 8 || fr.Record == nil || len(fr.Topic) > MaxTopic) {
			t.Fatalf("accepted %q %x", topic, seq)
		}
	})
}
