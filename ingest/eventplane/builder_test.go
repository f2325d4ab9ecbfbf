package eventplane_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/pypeer"
	"github.com/hintstream/hintstream/kvevents"
	"github.com/hintstream/hintstream/schemas"
)

// TestBuilderSequenceFrames: the independent builder's "sequence" frames
// (for end-to-end tests that need routing-time AddRequests of any
// prompt) decode, and their sequence hashes are the ones hintstream
// derives from the prompt, with and without an adapter's seed.
func TestBuilderSequenceFrames(t *testing.T) {
	tokens := make([]uint32, 16*5+3) // 5 full blocks and a partial one
	for i := range tokens {
		tokens[i] = uint32(31 * i)
	}
	specs, _ := json.Marshal([]map[string]any{
		{"kind": "sequence", "namespace": "dynamo", "component": "backend", "endpoint": "generate", "publisher": 5, "sequence": 0,
			"events": []map[string]any{{"op": "add", "request_id": "r1", "worker": 7, "dp": 1, "tokens": tokens, "block_size": 16}}},
		{"kind": "sequence", "namespace": "dynamo", "component": "backend", "endpoint": "generate", "publisher": 5, "sequence": 1,
			"batch": true, "events": []map[string]any{
				{"op": "add", "request_id": "r2", "worker": 8, "tokens": tokens, "block_size": 16, "lora": "sql-adapter"},
				{"op": "mark", "request_id": "r1", "worker": 7, "dp": 1}, {"op": "free", "request_id": "r1", "worker": 7, "dp": 1}}},
	})
	cmd := exec.Command(pypeer.Python(), "testdata/dynamo_frames.py", "frames")
	cmd.Stdin = bytes.NewReader(specs)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("builder: %v", err)
	}
	var frames []struct{ Subject, Hex string }
	if err := json.Unmarshal(out, &frames); err != nil || len(frames) != 2 {
		t.Fatalf("%v %d frames", err, len(frames))
	}
	var evs []eventplane.ActiveSequenceEvent
	for _, f := range frames {
		if !eventplane.IsActiveSequencesSubject(f.Subject) {
			t.Fatalf("subject %q", f.Subject)
		}
		data, _ := hex.DecodeString(f.Hex)
		fr, err := eventplane.DecodeActiveSequences(data, schemas.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, fr.Events...)
	}
	if len(evs) != 4 || evs[0].RequestID != "r1" || evs[0].DpRank != 1 || evs[2].Kind != eventplane.SequencePrefillCompleted ||
		evs[3].Kind != eventplane.SequenceFree || evs[1].LoraName != "sql-adapter" {
		t.Fatalf("events %+v", evs)
	}
	if got, want := evs[0].Add.SequenceHashes, kvevents.PromptHashes(tokens, 16); !slices.Equal(got, want) || len(got) != 5 {
		t.Errorf("sequence hashes %x, want %x", got, want)
	}
	seed := kvevents.BlockSeed("sql-adapter", "")
	if got, want := evs[1].Add.SequenceHashes, kvevents.PromptHashesSeeded(tokens, 16, seed); !slices.Equal(got, want) {
		t.Errorf("adapter's sequence hashes %x, want %x", got, want)
	}
}
