package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/hintstream/hintstream/ingest/requesttrace"
)

// A Dynamo request trace (package requesttrace) as a workload: what the
// file sink writes (one record a line, in its {"timestamp","event"}
// envelope, gzip members by default) or what the nats sink published.
//
//   - A request is a request_end record with a replay: its time is when
//     Dynamo received it (request_received_ms; else the record's time less
//     total_time_ms), from the first request's; its block ids are the
//     sequence hashes of its full blocks at trace_block_size, the
//     workload's block size; its prompt is those blocks (the partial tail,
//     never cached, is left out with its hash); its output length is
//     output_tokens.
//   - Its session is agent_context.session_id; its finish reason and tool
//     are finish_reason_metadata's (the first tool call's name). A request
//     whose input_trigger is tool_result (or whose request_payload ends
//     with a tool message) follows a tool call: the previous turn of its
//     session is marked one when its record gave no finish reason.
//   - Two request_end records of one request id (a frontend's retry) are
//     one request: the later one fills what the first lacked.
//   - tool_* records name no request; they are counted.
//
// A request_end without a replay (DYN_REQUEST_TRACE with no replay block
// size) has no block ids and cannot be played: it is counted, not failed.

// RequestTraceRead is what ReadRequestTrace read.
type RequestTraceRead struct {
	Records []Record
	// BlockSize is the requests' trace_block_size.
	BlockSize int
	// Workers are the distinct decode workers that served the requests
	// (worker id and dp rank pairs); ServedBy is each record's worker (0
	// when its record names none).
	Workers  int
	ServedBy []uint64
	// Model is the first request's model ("" when none names one).
	Model string
	// ToolEvents counts tool_start/tool_end/tool_error records;
	// NoReplay the request_end records without a full block (no replay,
	// or a prompt shorter than a block): nothing of theirs is cached.
	ToolEvents, NoReplay int
	// Skipped counts bad lines passed over (skipBad); FirstSkipped is the
	// first.
	Skipped      int
	FirstSkipped *LineError
}

// MaxRequestTraceLineBytes bounds one line of a request-trace file: a
// record of requesttrace.DefaultMaxBytes in its envelope.
const MaxRequestTraceLineBytes = requesttrace.DefaultMaxBytes + 64<<10

// IsRequestTrace reports whether the first record of r (a plain or gzip
// stream) is a request-trace record, and returns a reader that reads r
// from its start again. serde writes a record's schema first, so the
// head of the first line tells, however long the line (a payload's).
func IsRequestTrace(r io.Reader) (bool, io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(br.Size())
	if isGzip(head) {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return false, nil, fmt.Errorf("workload: %w", err)
		}
		// What the buffered members hold; a cut member ends the read.
		head, _ = io.ReadAll(io.LimitReader(zr, 64<<10))
	}
	return looksLikeRecord(head), br, nil
}

// looksLikeRecord: the first non-blank line of head is a request-trace
// record, or starts as one (serde's first member is the schema; the file
// sink's envelope puts the timestamp before it).
func looksLikeRecord(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	line, _, _ := bytes.Cut(head, []byte("\n"))
	if requesttrace.IsRecordLine(line) {
		return true
	}
	return bytes.Contains(line[:min(len(line), 256)], []byte(`"schema":"`+requesttrace.Schema+`"`))
}

func isGzip(head []byte) bool { return len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b }

// ReadRequestTrace reads a request-trace file (plain or gzip) into
// records in time order. A line that does not decode fails the read,
// naming it, unless skipBad, which counts it and goes on; a trace
// without a playable request fails with ErrNoRequests.
func ReadRequestTrace(r io.Reader, skipBad bool) (RequestTraceRead, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if head, _ := br.Peek(2); isGzip(head) {
		zr, err := gzip.NewReader(br) // every member, as the sink appends them
		if err != nil {
			return RequestTraceRead{}, fmt.Errorf("workload: %w", err)
		}
		defer zr.Close()
		r = zr
	} else {
		r = br
	}
	var b traceBuilder
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRequestTraceLineBytes)
	line := 0
	for sc.Scan() {
		line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		rec, err := requesttrace.Limits{}.DecodeLine(text)
		if err != nil {
			le := &LineError{Line: line, Reason: err.Error()}
			if !skipBad {
				return RequestTraceRead{}, le
			}
			b.out.Skipped++
			if b.out.FirstSkipped == nil {
				b.out.FirstSkipped = le
			}
			continue
		}
		if err := b.add(rec); err != nil {
			return RequestTraceRead{}, &LineError{Line: line, Reason: err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return RequestTraceRead{}, &LineError{Line: line + 1, Reason: fmt.Sprintf("longer than %d bytes", MaxRequestTraceLineBytes)}
		}
		return RequestTraceRead{}, fmt.Errorf("workload: reading request trace: %w", err)
	}
	return b.finish(true)
}

// RequestTraceBuilder builds records from decoded request-trace records
// (a stream's), as ReadRequestTrace does from a file's lines, with their
// times in Unix ms (a file's start at 0).
type RequestTraceBuilder struct{ b traceBuilder }

// Add takes one record; a request_end of another block size fails.
func (rb *RequestTraceBuilder) Add(r *requesttrace.Record) error { return rb.b.add(r) }

// Finish returns the records in time order (ErrNoRequests without one).
func (rb *RequestTraceBuilder) Finish() (RequestTraceRead, error) { return rb.b.finish(false) }

// traceBuilder gathers request_end records by request id.
type traceBuilder struct {
	out      RequestTraceRead
	ends     []*requesttrace.Record
	byID     map[string]int
	triggers map[string]string // request id → trigger its payload says
	workers  map[[2]uint64]bool
}

func (b *traceBuilder) add(rec *requesttrace.Record) error {
	if b.byID == nil {
		b.byID, b.triggers, b.workers = map[string]int{}, map[string]string{}, map[[2]uint64]bool{}
	}
	switch {
	case rec.IsTool():
		b.out.ToolEvents++
	case rec.EventType == requesttrace.RequestPayload:
		if t := rec.Payload.Trigger(); t != "" {
			b.triggers[rec.Payload.RequestID] = t
		}
	case rec.EventType == requesttrace.RequestEnd:
		m := rec.Request
		if rp := m.Replay; rp != nil {
			if b.out.BlockSize == 0 {
				b.out.BlockSize = int(min(rp.TraceBlockSize, MaxTraceTokens))
			}
			if uint64(b.out.BlockSize) != rp.TraceBlockSize {
				return fmt.Errorf("trace_block_size %d after %d: one trace has one block size", rp.TraceBlockSize, b.out.BlockSize)
			}
		}
		if k, ok := b.byID[m.RequestID]; ok {
			b.ends[k] = merge(b.ends[k], rec)
			return nil
		}
		b.byID[m.RequestID] = len(b.ends)
		b.ends = append(b.ends, rec)
	}
	return nil
}

// merge fills what first lacks from second.
func merge(first, second *requesttrace.Record) *requesttrace.Record {
	out, m := *first, *first.Request
	s := second.Request
	if out.AgentContext == nil {
		out.AgentContext = second.AgentContext
	}
	if m.Replay == nil {
		m.Replay = s.Replay
	}
	if m.Worker == nil {
		m.Worker = s.Worker
	}
	if m.Finish == nil {
		m.Finish = s.Finish
	}
	if m.Model == "" {
		m.Model = s.Model
	}
	if m.OutputTokens == nil {
		m.OutputTokens = s.OutputTokens
	}
	if m.RequestReceivedMs == nil {
		m.RequestReceivedMs = s.RequestReceivedMs
	}
	out.Request = &m
	return &out
}

// startMs is when Dynamo received the request.
func startMs(r *requesttrace.Record) int64 {
	m := r.Request
	if m.RequestReceivedMs != nil {
		return int64(min(*m.RequestReceivedMs, 1<<62))
	}
	t := int64(min(r.EventTimeUnixMs, 1<<62))
	if m.TotalTimeMs != nil && *m.TotalTimeMs > 0 && *m.TotalTimeMs < float64(t) {
		t -= int64(*m.TotalTimeMs)
	}
	return t
}

// finish orders the requests by start; relative: times from the first.
func (b *traceBuilder) finish(relative bool) (RequestTraceRead, error) {
	out := b.out
	type timed struct {
		at  int64
		rec *requesttrace.Record
	}
	var reqs []timed
	for _, r := range b.ends {
		if r.Request.Replay.FullBlocks() == 0 {
			out.NoReplay++
			continue
		}
		reqs = append(reqs, timed{startMs(r), r})
	}
	if len(reqs) == 0 {
		return out, fmt.Errorf("%w: no request_end record with block ids (replay) in the trace (%d bad lines skipped)",
			ErrNoRequests, out.Skipped)
	}
	// The sinks write at a request's end; the play is in start order.
	slices.SortStableFunc(reqs, func(a, b timed) int { return cmp.Compare(a.at, b.at) })
	var first int64
	if relative {
		first = reqs[0].at
	}
	lastOfSession := map[string]int{}
	for _, t := range reqs {
		m := t.rec.Request
		rp := m.Replay
		rec := Record{Timestamp: t.at - first, HashIDs: slices.Clone(rp.Full()), Session: sessionKey(t.rec.Session())}
		rec.InputLength = len(rec.HashIDs) * out.BlockSize
		if m.OutputTokens != nil {
			rec.OutputLength = int(min(*m.OutputTokens, MaxTraceTokens))
		}
		if reason := m.FinishReason(); reason != "" {
			rec.FinishReason = reason
		}
		if names := m.Finish.ToolNames(); len(names) > 0 && rec.FinishReason == "tool_calls" {
			rec.Tool = names[0]
		}
		var served uint64
		if w, dp, ok := m.WorkerID(); ok {
			b.workers[[2]uint64{w, uint64(dp)}] = true
			served = w
		}
		if out.Model == "" {
			out.Model = m.Model
		}
		trigger := t.rec.Trigger()
		if trigger == "" {
			trigger = b.triggers[m.RequestID]
		}
		if prev, ok := lastOfSession[rec.Session]; ok && rec.Session != "" && trigger == requesttrace.TriggerToolResult &&
			out.Records[prev].FinishReason == "" {
			out.Records[prev].FinishReason = "tool_calls"
		}
		if rec.Session != "" {
			lastOfSession[rec.Session] = len(out.Records)
		}
		if rec.InputLength > MaxTraceTokens {
			return out, fmt.Errorf("request %s: %d prompt tokens, more than %d (workload.MaxTraceTokens)", m.RequestID, rec.InputLength, MaxTraceTokens)
		}
		out.Records = append(out.Records, rec)
		out.ServedBy = append(out.ServedBy, served)
	}
	out.Workers = len(b.workers)
	return out, nil
}

// sessionKey keeps a trace's session ids apart from the names the
// workload gives sessions it links itself (as DecodeLine does).
func sessionKey(s string) string {
	if s == "" {
		return ""
	}
	return "s:" + s
}
