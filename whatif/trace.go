package whatif

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/hintstream/hintstream/whatif/workload"
)

// ErrBadLine marks a trace line that cannot be used; the error is a
// *LineError naming the line.
var ErrBadLine = errors.New("whatif: bad trace line")

// LineError is a bad trace line: its number (from 1) and why.
type LineError struct {
	Line   int
	Reason string
	// where is "stream" for a stream event (Reason names it), else a
	// trace line.
	where string
}

func (e *LineError) Error() string {
	if e.where == "stream" {
		return "whatif: " + e.Reason
	}
	return fmt.Sprintf("whatif: trace line %d: %s", e.Line, e.Reason)
}

// Unwrap makes a LineError match ErrBadLine.
func (e *LineError) Unwrap() error { return ErrBadLine }

// MaxTraceTokens bounds a trace line's input_length and output_length:
// hintstream run's own --max-tokens default (schemas.DefaultLimits), so
// a request the service would refuse is not simulated either. The play
// costs memory per token: before this bound, a line of 512 million
// tokens (10⁶ hash_ids) made a two-line run take 16.9 GB and 77 s.
const MaxTraceTokens = 1 << 20

// maxIDs is the most hash_ids a line of at most MaxTraceTokens tokens in
// blockSize-token blocks has.
func maxIDs(blockSize int) int { return (MaxTraceTokens + blockSize - 1) / blockSize }

// maxLineBytes bounds one trace line: maxIDs ids of up to 20 digits with
// room for spacing, and 64 KiB for the rest (a session_id). The scanner
// holds one line and the decoder its ids, so this bounds what one line
// costs before it is judged: 131 KiB at 512-token blocks, 34 MiB at 1.
func maxLineBytes(blockSize int) int { return (maxIDs(blockSize)+2)*32 + 64<<10 }

// rawLine is one Mooncake trace line as JSON has it; pointers tell a
// missing field from a zero one.
type rawLine struct {
	Timestamp    *json.Number    `json:"timestamp"`
	InputLength  *int64          `json:"input_length"`
	OutputLength *int64          `json:"output_length"`
	HashIDs      *[]uint64       `json:"hash_ids"`
	SessionID    json.RawMessage `json:"session_id"`
}

// DecodeLine decodes one Mooncake trace line: a JSON object with
// timestamp (ms, ≥ 0), input_length and output_length (≥ 0), hash_ids
// (non-empty, enough blocks of blockSize tokens for input_length) and an
// optional session_id (string or integer, as aiperf's multi-turn traces
// carry). Its errors give the reason only; ReadTrace names the line.
func DecodeLine(b []byte, blockSize int) (workload.Record, error) {
	var raw rawLine
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return workload.Record{}, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return workload.Record{}, errors.New("more than one JSON value")
	}
	var rec workload.Record
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
		return rec, fmt.Errorf("input_length %d, output_length %d: more than %d tokens (whatif.MaxTraceTokens, hintstream run's --max-tokens)",
			*raw.InputLength, *raw.OutputLength, MaxTraceTokens)
	case len(*raw.HashIDs) > maxIDs(blockSize):
		return rec, fmt.Errorf("%d hash_ids: more blocks than %d tokens fill in %d-token blocks (%d; whatif.MaxTraceTokens)",
			len(*raw.HashIDs), MaxTraceTokens, blockSize, maxIDs(blockSize))
	}
	rec = workload.Record{Timestamp: ts, InputLength: int(*raw.InputLength), OutputLength: int(*raw.OutputLength), HashIDs: *raw.HashIDs}
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
	return rec, nil
}

// TraceRead is what ReadTrace read.
type TraceRead struct {
	Records []workload.Record
	// Skipped counts bad lines passed over (SkipBad); FirstSkipped is the
	// first of them.
	Skipped      int
	FirstSkipped *LineError
}

// ReadTrace reads a Mooncake-format trace, one JSON object a line
// (DecodeLine); blank lines are passed over. A bad line, or one whose
// timestamp is before the previous line's, fails the read with a
// *LineError, unless skipBad, which counts it and goes on.
func ReadTrace(r io.Reader, blockSize int, skipBad bool) (TraceRead, error) {
	var out TraceRead
	sc := newTraceScanner(r, blockSize, skipBad)
	for {
		rec, err := sc.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, err
		}
		// The decoder grows the ids by doubling; the trace is held for
		// the whole run, so keep exactly what it holds.
		rec.HashIDs = slices.Clip(append(make([]uint64, 0, len(rec.HashIDs)), rec.HashIDs...))
		out.Records = append(out.Records, rec)
	}
	out.Skipped, out.FirstSkipped = sc.skipped, sc.firstSkipped
	if len(out.Records) == 0 {
		return out, fmt.Errorf("%w: no usable request in the trace (%d bad lines skipped)", ErrNoRequests, out.Skipped)
	}
	return out, nil
}

// traceScanner yields a trace's good lines one at a time, each with
// where it is in the file (Record.Source), counting the bad ones it
// passes over (skipBad) or failing on the first.
type traceScanner struct {
	sc           *bufio.Scanner
	blockSize    int
	skipBad      bool
	line         int
	last         int64
	pos, lineAt  int64
	skipped      int
	firstSkipped *LineError
}

func newTraceScanner(r io.Reader, blockSize int, skipBad bool) *traceScanner {
	t := &traceScanner{sc: bufio.NewScanner(r), blockSize: blockSize, skipBad: skipBad}
	t.sc.Buffer(make([]byte, 0, min(1<<20, maxLineBytes(blockSize))), maxLineBytes(blockSize))
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

// next returns the next good line's record, io.EOF after the last, or
// the first bad line's *LineError (not with skipBad).
func (t *traceScanner) next() (workload.Record, error) {
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
				return workload.Record{}, le
			}
			t.skipped++
			if t.firstSkipped == nil {
				t.firstSkipped = le
			}
			continue
		}
		t.last = rec.Timestamp
		rec.Source = workload.SourceRef{At: t.lineAt, Len: int32(len(t.sc.Bytes())), IDs: int32(len(rec.HashIDs))}
		return rec, nil
	}
	if err := t.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			// The scanner cannot go past it, so not even --skip-bad can.
			return workload.Record{}, &LineError{Line: t.line + 1, Reason: fmt.Sprintf(
				"longer than %d bytes (at most %d hash_ids of %d-token blocks, whatif.MaxTraceTokens)",
				maxLineBytes(t.blockSize), maxIDs(t.blockSize), t.blockSize)}
		}
		return workload.Record{}, fmt.Errorf("whatif: reading trace: %w", err)
	}
	return workload.Record{}, io.EOF
}

// ErrNoRequests: the source holds nothing to play.
var ErrNoRequests = errors.New("whatif: no requests")
