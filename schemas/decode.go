package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/tinylib/msgp/msgp"
)

// Format is an event's encoding.
type Format uint8

// The two encodings of our own events.
const (
	FormatJSON Format = iota + 1
	FormatMsgpack
)

func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatMsgpack:
		return "msgpack"
	}
	return "unknown"
}

// Limits bound what a decoder accepts so hostile input cannot exhaust
// memory. Zero fields take the defaults of DefaultLimits.
type Limits struct {
	MaxBytes   int // whole message; default 16 MiB
	MaxTokens  int // token_ids and output_token_ids, each; default 1,048,576
	MaxHeaders int // entries in headers; default 256
	MaxString  int // any one string (ids, header values); default 64 KiB
	// MaxDepth bounds the nesting of JSON and msgpack containers; default
	// 32 (our events and worker records nest at most 6 deep).
	MaxDepth int
	// MaxHeaderBytes bounds a NATS message's header names and values
	// together (CheckHeaders); default 16 KiB.
	MaxHeaderBytes int
}

// DefaultLimits returns the limits used when a field of Limits is zero.
func DefaultLimits() Limits {
	return Limits{MaxBytes: 16 << 20, MaxTokens: 1 << 20, MaxHeaders: 256, MaxString: 64 << 10, MaxDepth: 32,
		MaxHeaderBytes: 16 << 10}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	if l.MaxTokens <= 0 {
		l.MaxTokens = d.MaxTokens
	}
	if l.MaxHeaders <= 0 {
		l.MaxHeaders = d.MaxHeaders
	}
	if l.MaxString <= 0 {
		l.MaxString = d.MaxString
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = d.MaxHeaderBytes
	}
	return l
}

// DetectFormat picks the encoding from the Content-Type header when it
// names one, otherwise from the first non-blank byte: '{' is JSON, a
// msgpack map header is msgpack.
func DetectFormat(contentType string, data []byte) (Format, bool) {
	ct := strings.ToLower(contentType)
	switch {
	case strings.Contains(ct, "json"):
		return FormatJSON, true
	case strings.Contains(ct, "msgpack"):
		return FormatMsgpack, true
	}
	// A loop, not bytes.TrimLeft: that builds its cutset's table per call,
	// a tenth of a KV event's decode.
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n') {
		i++
	}
	if i == len(data) {
		return 0, false
	}
	switch b := data[i]; {
	case b == '{':
		return FormatJSON, true
	case IsMsgpackMap(b):
		return FormatMsgpack, true
	}
	return 0, false
}

// DecodeRequest decodes a request event with DefaultLimits.
func DecodeRequest(data []byte, contentType string) (*RequestEvent, error) {
	return Limits{}.DecodeRequest(data, contentType)
}

// DecodeResponse decodes a response event with DefaultLimits.
func DecodeResponse(data []byte, contentType string) (*ResponseEvent, error) {
	return Limits{}.DecodeResponse(data, contentType)
}

// DecodeRequest decodes and validates a request event (JSON or msgpack).
func (l Limits) DecodeRequest(data []byte, contentType string) (*RequestEvent, error) {
	return l.decodeRequest(data, contentType, true)
}

// DecodeRequestInto is DecodeRequest decoding into ev, overwriting all
// of it; the fast paths read the token ids into ev.TokenIDs's memory
// when it has the room. For a caller that decodes one request after
// another and keeps none (engine.Engine, for wake-ups: it saves 8 KB of
// a 2,048-token prompt per wake-up). It gives what DecodeRequest gives,
// except that absent token ids may be an empty slice rather than nil.
// After an error ev holds garbage.
func (l Limits) DecodeRequestInto(ev *RequestEvent, data []byte, contentType string) error {
	*ev = RequestEvent{TokenIDs: ev.TokenIDs[:0]}
	return l.decodeRequestInto(ev, data, contentType, true)
}

// decodeRequest is DecodeRequest; fast=false skips the fast paths, for
// tests that hold the two to the same answers.
func (l Limits) decodeRequest(data []byte, contentType string, fast bool) (*RequestEvent, error) {
	var ev RequestEvent
	if err := l.decodeRequestInto(&ev, data, contentType, fast); err != nil {
		return nil, err
	}
	return &ev, nil
}

func (l Limits) decodeRequestInto(ev *RequestEvent, data []byte, contentType string, fast bool) error {
	const kind = "request"
	l = l.withDefaults()
	if !fast || !l.fastJSON(data, contentType, ev) && !l.fastMsgpack(data, contentType, ev) {
		*ev = RequestEvent{} // the checked decoders would keep what a fast path set
		if err := l.decode(kind, data, contentType, ev); err != nil {
			return err
		}
	}
	if ev.RequestID == "" {
		return malformed(kind, "missing request_id", nil)
	}
	if len(ev.TokenIDs) > l.MaxTokens {
		return malformed(kind, "too many token_ids", nil)
	}
	if len(ev.Headers) > l.MaxHeaders {
		return malformed(kind, "too many headers", nil)
	}
	if !validTimestamp(ev.ReceivedAtMs) {
		return malformed(kind, "received_at_ms out of range", nil)
	}
	// The two strings that choose the block seed (kvevents.BlockSeed) get
	// their own reasons: a dead-lettered one says which field it was.
	if len(ev.LoraName) > l.MaxString {
		return malformed(kind, "lora_name too long", nil)
	}
	if len(ev.CacheSalt) > l.MaxString {
		return malformed(kind, "cache_salt too long", nil)
	}
	if reason := checkNvExt(ev.NvExt, &ev.SessionID); reason != "" {
		return malformed(kind, reason, nil)
	}
	if reason := l.checkSequences(ev.SequenceHashes, ev.SequenceBlockSize, ev.SequenceHashScheme, ev.PromptTokens); reason != "" {
		return malformed(kind, reason, nil)
	}
	strs := []string{ev.RequestID, ev.SessionID, ev.Model, ev.LoraName, ev.CacheSalt}
	for k, v := range ev.Headers {
		strs = append(strs, k, v)
	}
	if reason := l.checkStrings(strs...); reason != "" {
		return malformed(kind, reason, nil)
	}
	return nil
}

// DecodeResponse decodes and validates a response event (JSON or msgpack).
func (l Limits) DecodeResponse(data []byte, contentType string) (*ResponseEvent, error) {
	const kind = "response"
	l = l.withDefaults()
	var ev ResponseEvent
	if err := l.decode(kind, data, contentType, &ev); err != nil {
		return nil, err
	}
	if ev.RequestID == "" {
		return nil, malformed(kind, "missing request_id", nil)
	}
	if len(ev.OutputTokenIDs) > l.MaxTokens {
		return nil, malformed(kind, "too many output_token_ids", nil)
	}
	if !validTimestamp(ev.CompletedAtMs) {
		return nil, malformed(kind, "completed_at_ms out of range", nil)
	}
	if reason := checkNvExt(ev.NvExt, &ev.SessionID); reason != "" {
		return nil, malformed(kind, reason, nil)
	}
	if reason := l.checkSequences(ev.SequenceHashes, ev.SequenceBlockSize, ev.SequenceHashScheme, ev.PromptTokens); reason != "" {
		return nil, malformed(kind, reason, nil)
	}
	strs := []string{ev.RequestID, ev.SessionID, ev.Model, ev.FinishReason, ev.LoraName, ev.CacheSalt}
	for _, tc := range ev.ToolCalls {
		strs = append(strs, tc.Name)
	}
	if reason := l.checkStrings(strs...); reason != "" {
		return nil, malformed(kind, reason, nil)
	}
	return &ev, nil
}

// SequenceDecodeReasons are the reasons checkSequences gives, for
// counters listed before they move.
var SequenceDecodeReasons = []string{"sequence_hashes without sequence_block_size", "too many sequence_hashes",
	"prompt_tokens out of range", "unknown sequence_hash_scheme"}

// checkSequences returns a reason when an event's sequence hashes cannot
// be used: hashes without a block size, a prompt longer than MaxTokens
// (hashes times block size, or prompt_tokens: a 10^6-hash prompt is
// refused as a 10^6-token one would be), or a seeding this version does
// not know.
func (l Limits) checkSequences(hashes []uint64, blockSize uint32, scheme string, promptTokens uint32) string {
	switch {
	case len(hashes) > 0 && blockSize == 0:
		return SequenceDecodeReasons[0]
	case uint64(len(hashes))*uint64(blockSize) > uint64(l.MaxTokens):
		return SequenceDecodeReasons[1]
	case uint64(promptTokens) > uint64(l.MaxTokens):
		return SequenceDecodeReasons[2]
	}
	switch scheme {
	case "", HashSchemeRouter, HashSchemeUnsalted, HashSchemeKeyed:
		return ""
	}
	return SequenceDecodeReasons[3]
}

// DecodeLoad decodes a load report (JSON or msgpack).
func (l Limits) DecodeLoad(data []byte, contentType string) (*ActiveLoad, error) {
	l = l.withDefaults()
	var ev ActiveLoad
	if err := l.decode("load", data, contentType, &ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// DecodeRouterEvent decodes a Dynamo RouterEvent (JSON).
func (l Limits) DecodeRouterEvent(data []byte) (*RouterEvent, error) {
	return l.decodeRouterEvent(data, true)
}

// decodeRouterEvent is DecodeRouterEvent; fast=false skips the fast path,
// for tests that hold the two to the same answers.
func (l Limits) decodeRouterEvent(data []byte, fast bool) (*RouterEvent, error) {
	const kind = "router_event"
	l = l.withDefaults()
	var ev RouterEvent
	if !fast || !l.fastRouterJSON(data, &ev) {
		ev = RouterEvent{} // encoding/json would keep what the fast path set
		if err := l.decodeJSON(kind, data, &ev); err != nil {
			return nil, err
		}
	}
	if err := l.checkRouterEvent(&ev); err != nil {
		return nil, err
	}
	return &ev, nil
}

// checkRouterEvent is what a decoded RouterEvent must pass beyond its
// syntax.
func (l Limits) checkRouterEvent(ev *RouterEvent) error {
	const kind = "router_event"
	if ev.Event.Data.Kind == 0 {
		return malformed(kind, "missing event data", nil)
	}
	// An unknown storage_tier is not malformed: the index counts the event
	// and ignores it (index.ErrUnknownTier), since a newer Dynamo may
	// add a tier. It is cut to 64 bytes; no tier name is longer.
	if len(ev.StorageTier) > 64 {
		ev.StorageTier = ev.StorageTier[:64]
	}
	if s := ev.Event.Data.Stored; s != nil && len(s.Blocks) > l.MaxTokens {
		return malformed(kind, "too many blocks", nil)
	}
	return nil
}

// DecodeWorkerRecord decodes and validates a registry entry (JSON) under
// the default EndpointRules (see DecodeWorkerRecordWith).
func (l Limits) DecodeWorkerRecord(data []byte) (*WorkerRecord, error) {
	return l.DecodeWorkerRecordWith(data, EndpointRules{})
}

type msgpDecodable interface {
	msgp.Unmarshaler
}

func (l Limits) decode(kind string, data []byte, contentType string, v msgpDecodable) error {
	if len(data) > l.MaxBytes {
		return malformed(kind, "message too large", nil)
	}
	f, ok := DetectFormat(contentType, data)
	if !ok {
		return malformed(kind, "neither JSON nor a msgpack map", nil)
	}
	if f == FormatJSON {
		return l.decodeJSON(kind, data, v)
	}
	// DetectFormat looked past leading blanks; decode from the same byte,
	// or a sniffed " \x81..." would fail as an int where a map belongs.
	data = bytes.TrimLeft(data, " \t\r\n")
	// The generated decoders allocate a claimed array before reading its
	// elements; checkMsgpack rejects claims the bytes cannot back first.
	if err := checkMsgpackLimits(data, l); err != nil {
		if se := (*shapeError)(nil); errors.As(err, &se) {
			return malformed(kind, se.reason, nil)
		}
		return malformed(kind, msgpReason(err), err)
	}
	rest, err := v.UnmarshalMsg(data)
	if err != nil {
		return malformed(kind, msgpReason(err), err)
	}
	if len(rest) != 0 {
		return malformed(kind, "trailing bytes after msgpack", nil)
	}
	return nil
}

func (l Limits) decodeJSON(kind string, data []byte, v any) error {
	if len(data) > l.MaxBytes {
		return malformed(kind, "message too large", nil)
	}
	if !utf8.Valid(data) {
		return malformed(kind, "invalid UTF-8", nil)
	}
	// encoding/json grows a slice or map element by element; a 16 MiB
	// message of "0," would cost 64 MiB before any length check. The
	// shape walk rejects such input first, without allocating.
	if reason := l.checkJSON(data); reason != "" {
		return malformed(kind, reason, nil)
	}
	if err := json.Unmarshal(data, v); err != nil {
		if re := (*reasonError)(nil); errors.As(err, &re) {
			return malformed(kind, re.reason, err)
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return malformed(kind, "invalid JSON", err)
		case errors.As(err, &te) && te.Field != "":
			return malformed(kind, "wrong type for "+te.Field, err)
		case errors.As(err, &te):
			// A custom UnmarshalJSON (event data) wraps errors without a
			// field path; "wrong type for " alone would be a useless label.
			return malformed(kind, "wrong JSON type", err)
		}
		return malformed(kind, "invalid JSON", err)
	}
	return nil
}

// checkStrings returns a reason when a string is too long or not UTF-8;
// msgpack str carries no such guarantee and msgspec peers reject it.
func (l Limits) checkStrings(ss ...string) string {
	for _, s := range ss {
		if len(s) > l.MaxString {
			return "string too long"
		}
		if !utf8.ValidString(s) {
			return "invalid UTF-8"
		}
	}
	return ""
}

func msgpReason(err error) string {
	var se *shapeError
	if errors.As(err, &se) {
		return se.reason
	}
	switch {
	case errors.Is(err, msgp.ErrShortBytes):
		return "truncated msgpack"
	case errors.Is(err, msgp.ErrLimitExceeded):
		return "msgpack array or map too large"
	}
	var te msgp.TypeError
	if errors.As(err, &te) {
		return "wrong msgpack type"
	}
	var ue msgp.UintBelowZero
	if errors.As(err, &ue) {
		return "negative number"
	}
	var ie msgp.IntOverflow
	if errors.As(err, &ie) {
		return "number overflows its field"
	}
	var uo msgp.UintOverflow
	if errors.As(err, &uo) {
		return "number overflows its field"
	}
	return "invalid msgpack"
}

// maxTimestampMs is 9999-12-31T23:59:59.999Z: a time past it overflows
// time.Time's UnixMilli and is no one's clock.
const maxTimestampMs = 253402300799999

// validTimestamp accepts 0 (absent) and any time from 1970 to 9999.
func validTimestamp(ms int64) bool { return ms >= 0 && ms <= maxTimestampMs }

// CheckHeaders checks a NATS message's headers against the limits: at
// most MaxHeaders values, and MaxHeaderBytes of names and values in all.
// A violation is a *DecodeError of kind with reason "too many NATS
// headers" or "NATS headers too large". h is a nats.Header. (JetStream
// itself refuses headers over 64 KiB; these bounds are tighter.)
func (l Limits) CheckHeaders(kind string, h map[string][]string) error {
	if len(h) == 0 { // most messages: no limit to apply
		return nil
	}
	l = l.withDefaults()
	n, size := 0, 0
	for k, vs := range h {
		n += len(vs)
		for _, v := range vs {
			size += len(k) + len(v)
		}
	}
	switch {
	case n > l.MaxHeaders:
		return malformed(kind, "too many NATS headers", nil)
	case size > l.MaxHeaderBytes:
		return malformed(kind, "NATS headers too large", nil)
	}
	return nil
}
