package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// ErrBadLine marks a trace line that cannot be used; the error is a
// *LineError naming the line. It is ErrInvalid too.
var ErrBadLine = fmt.Errorf("%w: bad trace line", ErrInvalid)

// ErrNoRequests: the source holds nothing to play.
var ErrNoRequests = fmt.Errorf("%w: no requests", ErrInvalid)

// LineError is a bad trace line: its number (from 1) and why.
type LineError struct {
	Line   int
	Reason string
	// Source, when set, names what the bad record came from in place of
	// a trace line (whatif's stream events: Reason names the event); the
	// error is then Source: Reason.
	Source string
}

func (e *LineError) Error() string {
	if e.Source != "" {
		return e.Source + ": " + e.Reason
	}
	return fmt.Sprintf("workload: trace line %d: %s", e.Line, e.Reason)
}

// Unwrap makes a LineError match ErrBadLine.
func (e *LineError) Unwrap() error { return ErrBadLine }

// MaxTraceTokens bounds a trace line's input_length and output_length:
// hintstream run's own --max-tokens default (schemas.DefaultLimits), so
// a request the service would refuse is not simulated either. The play
// costs memory per token: before this bound, a line of 512 million
// tokens (10⁶ hash_ids) made a two-line run take 16.9 GB and 77 s.
const MaxTraceTokens = 1 << 20

// MaxTraceIDs is the most hash_ids a line of at most MaxTraceTokens
// tokens in blockSize-token blocks has.
func MaxTraceIDs(blockSize int) int { return (MaxTraceTokens + blockSize - 1) / blockSize }

// MaxTraceLineBytes bounds one trace line: MaxTraceIDs ids of up to 20 digits with
// room for spacing, and 64 KiB for the rest (a session_id). The scanner
// holds one line and the decoder its ids, so this bounds what one line
// costs before it is judged: 131 KiB at 512-token blocks, 34 MiB at 1.
func MaxTraceLineBytes(blockSize int) int { return (MaxTraceIDs(blockSize)+2)*32 + 64<<10 }

// rawLine is one Mooncake trace line as JSON has it; pointers tell a
// missing field from a zero one.
type rawLine struct {
	Timestamp    *json.Number    `json:"timestamp"`
	InputLength  *int64          `json:"input_length"`
	OutputLength *int64          `json:"output_length"`
	HashIDs      *[]uint64       `json:"hash_ids"`
	SessionID    json.RawMessage `json:"session_id"`
	FinishReason *string         `json:"finish_reason"`
	Tool         *string         `json:"tool"`
}

// DecodeLine decodes one Mooncake trace line: a JSON object with
// timestamp (ms, ≥ 0), input_length and output_length (≥ 0), hash_ids
// (non-empty, enough blocks of blockSize tokens for input_length) and an
// optional session_id (string or integer, as aiperf's multi-turn traces
// carry), and optionally finish_reason ("tool_calls" for a tool call) and
// tool (the tool's name), as an agentic trace may carry: a line with
// either says whether its response ends in a tool call, and the
// simulation then announces its next turn as a deployment would
// (Signals) instead of assuming. Its errors give the reason only;
// ReadRecords names the line.
func DecodeLine(b []byte, blockSize int) (Record, error) {
	var raw rawLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Record{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return Record{}, errors.New("more than one JSON value")
	}
	var rec Record
	switch {
	case raw.Timestamp == nil:
		return rec, errors.New("no timestamp")
	case raw.InputLength == nil:
		return rec, errors.New("no input_length")
	case raw.OutputLength == nil:
		return rec, errors.New("no output_length")
	case raw.HashIDs == nil || len(*raw.HashIDs) == 0:
		return rec, errors.New("empty hash_ids")
	}
	ts, err := raw.Timestamp.Int64()
	if err != nil {
		// Some traces write whole milliseconds as 12.0.
		f, ferr := raw.Timestamp.Float64()
		if ferr != nil || f != float64(int64(f)) {
			return rec, fmt.Errorf("timestamp %s is not a whole number of ms", raw.Timestamp.String())
		}
		ts = int64(f)
	}
	switch {
	case ts < 0:
		return rec, fmt.Errorf("negative timestamp %d", ts)
	case *raw.InputLength < 0 || *raw.OutputLength < 0:
		return rec, fmt.Errorf("negative length (input %d, output %d)", *raw.InputLength, *raw.OutputLength)
	case *raw.InputLength > int64(len(*raw.HashIDs))*int64(blockSize):
		return rec, fmt.Errorf("%d hash_ids cannot hold %d tokens in %d-token blocks", len(*raw.HashIDs), *raw.InputLength, blockSize)
	case *raw.InputLength > MaxTraceTokens || *raw.OutputLength > MaxTraceTokens:
		return rec, fmt.Errorf("input_length %d, output_length %d: more than %d tokens (workload.MaxTraceTokens, hintstream run's --max-tokens)",
			*raw.InputLength, *raw.OutputLength, MaxTraceTokens)
	case len(*raw.HashIDs) > MaxTraceIDs(blockSize):
		return rec, fmt.Errorf("%d hash_ids: more blocks than %d tokens fill in %d-token blocks (%d; workload.MaxTraceTokens)",
			len(*raw.HashIDs), MaxTraceTokens, blockSize, MaxTraceIDs(blockSize))
	}
	rec = Record{Timestamp: ts, InputLength: int(*raw.InputLength), OutputLength: int(*raw.OutputLength), HashIDs: *raw.HashIDs}
	if len(raw.SessionID) > 0 && string(raw.SessionID) != "null" {
		var s string
		if err := json.Unmarshal(raw.SessionID, &s); err != nil {
			var n json.Number
			if err := json.Unmarshal(raw.SessionID, &n); err != nil {
				return rec, errors.New("session_id is neither a string nor a number")
			}
			s = n.String()
		}
		if s == "" {
			return rec, errors.New("empty session_id")
		}
		rec.Session = "s:" + s
	}
	if raw.FinishReason != nil {
		if *raw.FinishReason == "" {
			return rec, errors.New("empty finish_reason")
		}
		rec.FinishReason = *raw.FinishReason
	}
	if raw.Tool != nil {
		if *raw.Tool == "" {
			return rec, errors.New("empty tool")
		}
		if rec.FinishReason != "" && rec.FinishReason != FinishToolCalls {
			return rec, fmt.Errorf("tool %q with finish_reason %q (a tool is named only on a %q response)", *raw.Tool, rec.FinishReason, FinishToolCalls)
		}
		rec.Tool = *raw.Tool
	}
	return rec, nil
}

// TraceRead is what ReadRecords read.
type TraceRead struct {
	Records []Record
	// Skipped counts bad lines passed over (SkipBad); FirstSkipped is the
	// first of them.
	Skipped      int
	FirstSkipped *LineError
}

// ReadRecords reads a Mooncake-format trace, one JSON object a line
// (DecodeLine); blank lines are passed over. A bad line, or one whose
// timestamp is before the previous line's, fails the read with a
// *LineError, unless skipBad, which counts it and goes on. A trace
// without a good line fails with ErrNoRequests.
func ReadRecords(r io.Reader, blockSize int, skipBad bool) (TraceRead, error) {
	var out TraceRead
	sc := NewTraceScanner(r, blockSize, skipBad)
	for {
		rec, err := sc.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
		out.Records = append(out.Records, clipIDs(rec))
	}
	out.Skipped, out.FirstSkipped = sc.skipped, sc.firstSkipped
	if len(out.Records) == 0 {
		return out, fmt.Errorf("%w: no usable request in the trace (%d bad lines skipped)", ErrNoRequests, out.Skipped)
	}
	return out, nil
}

// clipIDs copies rec's ids to a slice of their length: the decoder grows
// them by doubling, and a read trace is held for the whole run.
func clipIDs(rec Record) Record {
	rec.HashIDs = slices.Clip(append(make([]uint64, 0, len(rec.HashIDs)), rec.HashIDs...))
	return rec
}

// TraceScanner yields a trace's good lines one at a time, each with
// where it is in the file (Record.Source), counting the bad ones it
// passes over (skipBad) or failing on the first.
type TraceScanner struct {
	sc           *bufio.Scanner
	blockSize    int
	skipBad      bool
	line         int
	last         int64
	pos, lineAt  int64
	skipped      int
	firstSkipped *LineError
}

// NewTraceScanner reads a Mooncake-format trace from r in
// blockSize-token blocks (DecodeLine).
func NewTraceScanner(r io.Reader, blockSize int, skipBad bool) *TraceScanner {
	t := &TraceScanner{sc: bufio.NewScanner(r), blockSize: blockSize, skipBad: skipBad}
	t.sc.Buffer(make([]byte, 0, min(1<<20, MaxTraceLineBytes(blockSize))), MaxTraceLineBytes(blockSize))
	// Where each line starts, for reading its ids back (IDs).
	t.sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		if adv > 0 {
			t.lineAt, t.pos = t.pos, t.pos+int64(adv)
		}
		return adv, tok, err
	})
	return t
}

// Next returns the next good line's record, io.EOF after the last, or
// the first bad line's *LineError (not with skipBad).
func (t *TraceScanner) Next() (Record, error) {
	for t.sc.Scan() {
		t.line++
		b := bytes.TrimSpace(t.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		rec, err := DecodeLine(b, t.blockSize)
		if err == nil && rec.Timestamp < t.last {
			err = fmt.Errorf("timestamp %d before the previous line's %d (a trace is in time order)", rec.Timestamp, t.last)
		}
		if err != nil {
			le := &LineError{Line: t.line, Reason: err.Error()}
			if !t.skipBad {
				return Record{}, le
			}
			t.skipped++
			if t.firstSkipped == nil {
				t.firstSkipped = le
			}
			continue
		}
		t.last = rec.Timestamp
		rec.Source = SourceRef{At: t.lineAt, Len: int32(len(t.sc.Bytes())), IDs: int32(len(rec.HashIDs))}
		return rec, nil
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			// The scanner cannot go past it, so not even --skip-bad can.
			return Record{}, &LineError{Line: t.line + 1, Reason: fmt.Sprintf(
				"longer than %d bytes (at most %d hash_ids of %d-token blocks, workload.MaxTraceTokens)",
				MaxTraceLineBytes(t.blockSize), MaxTraceIDs(t.blockSize), t.blockSize)}
		}
		return Record{}, fmt.Errorf("workload: reading trace: %w", err)
	}
	return Record{}, io.EOF
}

// Skipped is how many bad lines were passed over (skipBad), and the first
// of them.
func (t *TraceScanner) Skipped() (int, *LineError) { return t.skipped, t.firstSkipped }

// LoadTrace reads the Mooncake-format trace at path (see ReadTrace).
func LoadTrace(path string, o TraceOptions) (*Workload, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	defer f.Close()
	return ReadTrace(f, o)
}

// ReadTrace reads a Mooncake-format trace as ReadRecords does (the first
// bad line fails the read, naming it) into a workload: Skip drops the
// first requests, Limit keeps the next ones.
func ReadTrace(r io.Reader, o TraceOptions) (*Workload, error) {
	o = o.withDefaults()
	sc := NewTraceScanner(r, o.BlockSize, false)
	var recs []Record
	for read := 0; o.Limit <= 0 || len(recs) < o.Limit; read++ {
		rec, err := sc.Next()
		if err == io.EOF {
			if read == 0 {
				return nil, fmt.Errorf("%w: no usable request in the trace", ErrNoRequests)
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if read >= o.Skip {
			recs = append(recs, clipIDs(rec))
		}
	}
	return FromRecords(recs, o)
}
