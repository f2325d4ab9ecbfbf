package workload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const good = `{"timestamp": 0, "input_length": 1000, "output_length": 5, "hash_ids": [1, 2]}`

func TestBadLinesAreNamed(t *testing.T) {
	for _, tc := range []struct {
		name, line, want string
	}{
		{"malformed", `{"timestamp": 3, "input_length": `, "not a JSON object"},
		{"not an object", `[1,2]`, "not a JSON object"},
		{"negative timestamp", `{"timestamp": -5, "input_length": 10, "output_length": 1, "hash_ids": [1]}`, "negative timestamp -5"},
		{"fractional timestamp", `{"timestamp": 1.5, "input_length": 10, "output_length": 1, "hash_ids": [1]}`, "not a whole number"},
		{"empty hash_ids", `{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": []}`, "empty hash_ids"},
		{"no hash_ids", `{"timestamp": 5, "input_length": 10, "output_length": 1}`, "empty hash_ids"},
		{"no timestamp", `{"input_length": 10, "output_length": 1, "hash_ids": [1]}`, "no timestamp"},
		{"too few blocks", `{"timestamp": 5, "input_length": 1025, "output_length": 1, "hash_ids": [1, 2]}`, "cannot hold 1025 tokens"},
		{"negative length", `{"timestamp": 5, "input_length": -1, "output_length": 1, "hash_ids": [1]}`, "negative length"},
		{"out of order", `{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1]}`, "before the previous line's 7"},
		{"bad session", `{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "session_id": [1]}`, "session_id"},
		{"bad finish", `{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "finish_reason": 3}`, "not a JSON object"},
		{"empty finish", `{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "finish_reason": ""}`, "empty finish_reason"},
		{"empty tool", `{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "tool": ""}`, "empty tool"},
		{"tool on a stop", `{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [1], "finish_reason": "stop", "tool": "bash"}`, "a tool is named only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := strings.Join([]string{good, `{"timestamp": 7, "input_length": 10, "output_length": 1, "hash_ids": [3]}`, "", tc.line,
				`{"timestamp": 9, "input_length": 10, "output_length": 1, "hash_ids": [4]}`}, "\n")
			_, err := ReadRecords(strings.NewReader(in), 512, false)
			var le *LineError
			if !errors.As(err, &le) || !errors.Is(err, ErrBadLine) || le.Line != 4 ||
				!strings.Contains(err.Error(), "trace line 4") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want line 4 with %q", err, tc.want)
			}
			tr, err := ReadRecords(strings.NewReader(in), 512, true)
			if err != nil || tr.Skipped != 1 || tr.FirstSkipped == nil || tr.FirstSkipped.Line != 4 {
				t.Fatalf("--skip-bad: %+v, %v", tr, err)
			}
			// The good line after the bad one is kept.
			if len(tr.Records) != 3 {
				t.Fatalf("--skip-bad kept %d records, want 3", len(tr.Records))
			}
		})
	}
}

func TestSessionsLinkTurns(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 1024, "output_length": 5, "hash_ids": [1, 2], "session_id": "a"}
{"timestamp": 1, "input_length": 512, "output_length": 5, "hash_ids": [9], "session_id": 7}
{"timestamp": 2, "input_length": 1536, "output_length": 5, "hash_ids": [1, 2, 3], "session_id": "a"}`
	tr, err := ReadRecords(strings.NewReader(in), 512, false)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Records[0].Session != "s:a" || tr.Records[1].Session != "s:7" || tr.Records[2].Session != "s:a" {
		t.Fatalf("sessions %q %q %q", tr.Records[0].Session, tr.Records[1].Session, tr.Records[2].Session)
	}
	if _, err := ReadRecords(strings.NewReader("\n\n"), 512, false); !errors.Is(err, ErrNoRequests) {
		t.Fatalf("empty trace: %v", err)
	}
}

func FuzzDecodeLine(f *testing.F) {
	for _, s := range []string{good, `{"timestamp": 1.0, "input_length": 0, "output_length": 0, "hash_ids": [0], "session_id": "x"}`,
		`{"timestamp": -1}`, `{}`, `null`, `{"timestamp": 1e30, "input_length": 1, "output_length": 1, "hash_ids": [1]}`,
		`{"timestamp": 1, "input_length": 99999999999, "output_length": 1, "hash_ids": [1]}`,
		`{"timestamp": 1, "input_length": 1048577, "output_length": 1, "hash_ids": ` + idList(2049) + `}`,
		`{"timestamp": 1, "input_length": 1, "output_length": 1073741824, "hash_ids": [1]}`,
		`{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": ` + idList(2049) + `}`,
		`{"timestamp": 1, "input_length": 9, "output_length": 1, "hash_ids": [1], "finish_reason": "tool_calls", "tool": "bash"}`,
		`{"timestamp": 1, "input_length": 9, "output_length": 1, "hash_ids": [1], "finish_reason": "stop", "tool": 7}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rec, err := DecodeLine(b, 512)
		if err != nil {
			return
		}
		if rec.Timestamp < 0 || rec.InputLength < 0 || rec.OutputLength < 0 || len(rec.HashIDs) == 0 ||
			rec.InputLength > len(rec.HashIDs)*512 || rec.InputLength > MaxTraceTokens || rec.OutputLength > MaxTraceTokens ||
			len(rec.HashIDs) > MaxTraceIDs(512) {
			t.Fatalf("accepted %q as %+v", b, rec)
		}
	})
}

// FuzzReadRecords: the line reader (scanner, line bound, order check) on
// any bytes never panics; it either names a line that exists or returns
// records in time order within the bounds.
func FuzzReadRecords(f *testing.F) {
	for _, s := range []string{good + "\r\n" + good, "\n\n", good + "\n" + `{"timestamp": -1}`,
		`{"timestamp": 9, "input_length": 1, "output_length": 1, "hash_ids": [1]}` + "\n" + good,
		`{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": ` + idList(6000) + `}`, "\x00\r\r\n{"} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, skipBad bool) {
		tr, err := ReadRecords(bytes.NewReader(b), 512, skipBad)
		var le *LineError
		if errors.As(err, &le) {
			if le.Line < 1 || le.Line > bytes.Count(b, []byte("\n"))+1 {
				t.Fatalf("line %d named in %d bytes of %d lines", le.Line, len(b), bytes.Count(b, []byte("\n"))+1)
			}
			return
		}
		if err != nil {
			return
		}
		for i, r := range tr.Records {
			if (i > 0 && r.Timestamp < tr.Records[i-1].Timestamp) || r.InputLength > MaxTraceTokens || len(r.HashIDs) > MaxTraceIDs(512) {
				t.Fatalf("record %d: %+v", i, r)
			}
		}
	})
}

// idList is a JSON list of n ids (all 7: only their count matters here).
func idList(n int) string { return "[" + strings.TrimSuffix(strings.Repeat("7,", n), ",") + "]" }

func TestDecodeLineToolCallFacts(t *testing.T) {
	for _, tc := range []struct {
		line              string
		known, call       bool
		finish, tool, ses string
	}{
		{`{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1]}`, false, false, "", "", ""},
		{`{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1], "session_id": "c1", "finish_reason": "tool_calls", "tool": "bash"}`, true, true, "tool_calls", "bash", "s:c1"},
		{`{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1], "finish_reason": "stop"}`, true, false, "stop", "", ""},
		{`{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1], "finish_reason": "length"}`, true, false, "length", "", ""},
		{`{"timestamp": 1, "input_length": 10, "output_length": 1, "hash_ids": [1], "tool": "edit"}`, true, true, "", "edit", ""},
	} {
		rec, err := DecodeLine([]byte(tc.line), 512)
		if err != nil {
			t.Fatalf("%s: %v", tc.line, err)
		}
		known, call, tool := rec.facts()
		if rec.FinishReason != tc.finish || rec.Tool != tc.tool || rec.Session != tc.ses || known != tc.known || call != tc.call || tool != tc.tool {
			t.Fatalf("%s: %+v: known %v call %v tool %q", tc.line, rec, known, call, tool)
		}
	}
}
