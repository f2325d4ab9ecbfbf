package benchtrace

import (
	"bufio"
	"bytes"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/whatif/workload"
)

// The trace has the shape the speed figures name: every line a valid
// Mooncake line, in time order, each turn's blocks its previous turn's
// then new ones (or a compacted restart on the shared prefix), about 49
// requests a conversation, and prompts with a median near 100K tokens
// within 9K–900K.
func TestTraceShape(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, Options{}); err != nil {
		t.Fatal(err)
	}
	last := map[string][]uint64{}
	var inputs []int
	var at int64
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rec, err := workload.DecodeLine(sc.Bytes(), 512)
		if err != nil {
			t.Fatalf("line %d: %v", len(inputs)+1, err)
		}
		if rec.Timestamp < at {
			t.Fatalf("line %d goes back in time", len(inputs)+1)
		}
		at = rec.Timestamp
		if prev, ok := last[rec.Session]; ok {
			grows := len(rec.HashIDs) > len(prev) && slices.Equal(rec.HashIDs[:len(prev)], prev)
			compacted := slices.Equal(rec.HashIDs[:sharedPrefixBlocks], prev[:sharedPrefixBlocks])
			if !grows && !compacted {
				t.Fatalf("line %d: session %s does not extend its previous turn", len(inputs)+1, rec.Session)
			}
		}
		last[rec.Session] = rec.HashIDs
		inputs = append(inputs, rec.InputLength)
	}
	if len(inputs) != 6400 {
		t.Fatalf("%d requests, want 6400", len(inputs))
	}
	slices.Sort(inputs)
	med := inputs[len(inputs)/2]
	if perConv := len(inputs) / len(last); perConv < 35 || perConv > 65 {
		t.Errorf("%d requests a conversation, want about 49", perConv)
	}
	if med < 80_000 || med > 130_000 || inputs[0] < 9_000 || inputs[len(inputs)-1] > 900_000 {
		t.Errorf("prompts %d … %d, median %d: want 9K–900K, median near 100K", inputs[0], inputs[len(inputs)-1], med)
	}
}

// With Facts every line says how its turn ended, about 85% in a tool
// call naming its tool; without, no line does, and the lines are
// otherwise the same.
func TestTraceFacts(t *testing.T) {
	var plain, facts bytes.Buffer
	if err := Write(&plain, Options{Requests: 2000}); err != nil {
		t.Fatal(err)
	}
	if err := Write(&facts, Options{Requests: 2000, Facts: true}); err != nil {
		t.Fatal(err)
	}
	ps, fs := bufio.NewScanner(&plain), bufio.NewScanner(&facts)
	ps.Buffer(nil, 1<<20)
	fs.Buffer(nil, 1<<20)
	n, tools := 0, 0
	for ps.Scan() && fs.Scan() {
		p, err := workload.DecodeLine(ps.Bytes(), 512)
		if err != nil {
			t.Fatal(err)
		}
		f, err := workload.DecodeLine(fs.Bytes(), 512)
		if err != nil {
			t.Fatal(err)
		}
		if p.FinishReason != "" || p.Tool != "" {
			t.Fatalf("line %d without facts says %q %q", n+1, p.FinishReason, p.Tool)
		}
		switch {
		case f.FinishReason == workload.FinishToolCalls && f.Tool != "":
			tools++
		case f.FinishReason != "stop" || f.Tool != "":
			t.Fatalf("line %d: finish %q tool %q", n+1, f.FinishReason, f.Tool)
		}
		f.FinishReason, f.Tool = "", ""
		if f.Timestamp != p.Timestamp || f.InputLength != p.InputLength || !slices.Equal(f.HashIDs, p.HashIDs) {
			t.Fatalf("line %d differs beyond its facts", n+1)
		}
		n++
	}
	if n != 2000 {
		t.Fatalf("%d lines", n)
	}
	if share := float64(tools) / float64(n); share < 0.8 || share > 0.9 {
		t.Fatalf("tool-call share %.3f, want about 0.85", share)
	}
}
