package agentevents

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
	"github.com/zeebo/xxh3"
)

// Frame is one harness message, its record decoded.
type Frame struct {
	Topic  string
	Seq    uint64
	Data   []byte // the record's bytes, republished unchanged
	Record *Record
}

// MaxTopic bounds the topic frame; it names the publisher in headers.
const MaxTopic = 256

// ParseFrame reads [topic, seq_be_u64, msgpack(record)] strictly: exactly
// three frames, an 8-byte seq, a UTF-8 topic without control characters
// of at most MaxTopic bytes, and a record Decode accepts as msgpack. Its
// errors are *schemas.DecodeError of Kind.
func ParseFrame(frames [][]byte) (Frame, error) {
	if len(frames) != 3 {
		return Frame{}, bad("not 3 frames", fmt.Errorf("%d frames, want [topic, seq, record]", len(frames)))
	}
	topic := frames[0]
	if len(topic) > MaxTopic {
		return Frame{}, bad("topic too long", nil)
	}
	if !utf8.Valid(topic) || containsControl(topic) {
		return Frame{}, bad("topic not printable UTF-8", nil)
	}
	if len(frames[1]) != 8 {
		return Frame{}, bad("seq not 8 bytes", fmt.Errorf("seq frame of %d bytes", len(frames[1])))
	}
	if r := frames[2]; len(r) == 0 || !(r[0] >= 0x80 && r[0] <= 0x8f || r[0] == 0xde || r[0] == 0xdf) {
		return Frame{}, bad("record not a msgpack map", nil)
	}
	rec, err := Decode(frames[2], "application/msgpack")
	if err != nil {
		return Frame{}, err
	}
	return Frame{Topic: string(topic), Seq: binary.BigEndian.Uint64(frames[1]), Data: frames[2], Record: rec}, nil
}

func containsControl(b []byte) bool {
	for _, r := range string(b) {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// FrameReasons are ParseFrame's own reasons, for counters listed at 0.
var FrameReasons = []string{"not 3 frames", "topic too long", "topic not printable UTF-8", "seq not 8 bytes",
	"record not a msgpack map"}

// Subject defaults.
const (
	// SubjectPrefix is where records are published: SubjectPrefix +
	// the workflow id as one token.
	SubjectPrefix = "agent.events."
	// DefaultStream is the stream that captures SubjectPrefix + ">".
	DefaultStream = "AGENT_EVENTS"
	// DeadLetterKind names the dead-letter subject of bad frames and
	// records: hintstream.dlq.agent_events.
	DeadLetterKind = "agent_events"
)

// Subject is where r is published: agent.events.<workflow_id>, the id made
// one subject token by streams.ModelToken.
func Subject(r *Record) string { return SubjectPrefix + streams.ModelToken(r.AgentContext.WorkflowID) }

// StreamConfig is AGENT_EVENTS as hintstream creates it when absent: file
// storage, one replica, the default duplicate window (the Msg-Id's
// window), records kept a day (a tool's time is learned as it ends; a
// replay of the last day is enough to debug).
func StreamConfig() streams.Config {
	c := streams.DefaultSet().Requests
	c.Name, c.Subjects = DefaultStream, []string{SubjectPrefix + ">"}
	c.Description = "hintstream: agent harness tool events"
	c.MaxAge = 24 * time.Hour
	return c
}

// Headers on every republished record. The sequence header is the KV
// bridge's (schemas.HeaderBridgeSeq): one name on the wire for a
// republished message's sequence.
const (
	HeaderPublisher = "Hintstream-Agent-Publisher"
	HeaderSeq       = schemas.HeaderBridgeSeq
	ContentType     = "application/msgpack"
)

// MsgID is a record's Nats-Msg-Id (see the package doc): publisher and
// seq, and the record's hash, which tells a restarted harness's seq 1
// from its previous incarnation's.
func MsgID(publisher string, seq uint64, record []byte) string {
	return "agent-" + strconv.FormatUint(xxh3.HashString(publisher), 16) + "-" + strconv.FormatUint(seq, 10) +
		"-" + strconv.FormatUint(xxh3.Hash(record), 16)
}

// AllReasons are every reason Decode and ParseFrame give, bar the
// "wrong type for"/"missing"/"too long" families named per field.
func AllReasons() []string {
	r := append([]string{}, FrameReasons...)
	r = append(r, "record too large", "neither JSON nor a msgpack map", "invalid UTF-8", "invalid JSON",
		"invalid msgpack", "truncated msgpack", "msgpack nested too deeply", "trailing bytes after msgpack",
		"unsupported schema", "not a tool event", "unknown event_type", "not harness-originated",
		"missing agent_context", "missing tool", "unknown tool status", "duration_ms not a finite non-negative number")
	return append(r, schemas.AgentDecodeReasons...)
}
