package workload

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hintstream/hintstream/schemas"
)

// DefaultBlockSize is the block size of Mooncake traces' hash_ids.
const DefaultBlockSize = 512

// DefaultModel is the model name requests carry when none is set.
const DefaultModel = "sim/model"

// ToolName is the tool every tool call of this package names.
const ToolName = "trace_tool"

// outputBlockBase is the first block id of the token space output tokens
// are drawn from when a request has no next turn to take them from; far
// above any trace's ids and below 2^31/512, so tokens stay distinct.
const outputBlockBase = 1 << 21

// ErrInvalid marks a workload or configuration that cannot be used.
var ErrInvalid = errors.New("workload: invalid")

// Kind is what an Event is.
type Kind uint8

// Event kinds, in the order events of equal time are played: a response
// frees its worker before the wake-up and request that follow it.
const (
	KindResponse Kind = iota + 1
	KindWakeup
	KindRequest
)

func (k Kind) String() string {
	switch k {
	case KindResponse:
		return "response"
	case KindWakeup:
		return "wakeup"
	case KindRequest:
		return "request"
	}
	return "unknown"
}

// Request is one chat request and what is known about its conversation.
type Request struct {
	Index   int
	ID      string // "req-<index>"
	Session string // "s-<index of the conversation's first turn>"
	Turn    int    // 0 for a conversation's first request
	// At is the request's time from the workload's start; ResponseAt its
	// response's.
	At, ResponseAt time.Duration
	// HasWakeup says a wake-up announces this request at WakeupAt.
	HasWakeup bool
	WakeupAt  time.Duration
	// InputLength is the prompt's token count; HashIDs its blocks' ids
	// (the last one partial unless InputLength is a multiple of the block
	// size).
	InputLength, OutputLength int
	HashIDs                   []uint64
	// Prev and Next are the conversation's neighbouring turns, -1 if none.
	// Next is the first request that continues this one; a later one is a
	// fork (Fork), with Prev set.
	Prev, Next int
	Fork       bool
	// ToolCall says the response ends in a tool call; ToolTime is the
	// time from the response to the next turn. FinishKnown says the
	// trace said so (Record.FinishReason); otherwise ToolCall is the
	// assumed rule's (see the package documentation). Tool names the
	// tool (ToolName when the trace names none).
	ToolCall    bool
	ToolTime    time.Duration
	FinishKnown bool
	Tool        string
	// signal is how this request's wake-up was decided (sig*);
	// predicted the tool time predicted at its tool call (0: none).
	signal    uint8
	predicted time.Duration
}

// WakeupPredicted says r's wake-up is a predicted prefetch's
// (SignalPredicted): the tracker sends another at the tool's end when
// this one expired before it.
func (r *Request) WakeupPredicted() bool { return r.HasWakeup && r.signal == sigPredicted }

// WakeupAtToolEnd says r's wake-up is the one the tracker sends at its
// tool's end with no prediction fired before it (SignalToolEnd, or
// SignalPredicted when the tool ended first).
func (r *Request) WakeupAtToolEnd() bool { return r.HasWakeup && r.signal == sigToolEnd }

// Event is one thing that happens at At: a wake-up, request or response
// of Requests[Request].
type Event struct {
	At      time.Duration
	Kind    Kind
	Request int
}

// Workload is a list of requests and their events in play order.
type Workload struct {
	Model     string
	BlockSize int
	// Service is the model that timed the responses.
	Service ServiceModel
	// Requests and Events are the workload when built in memory; read
	// it through Len, Req, NumEvents and EventRange (access.go), which
	// also serve one kept on disk (Spool).
	Requests []Request
	Events   []Event
	// Signals and AssumedLead are the rules the wake-ups were made by
	// (AssumedLead for turns after one whose finish is not known).
	Signals     Signals
	AssumedLead time.Duration
	back        backing
	// lastBits ([]uint64) marks each conversation's last request of a
	// workload in memory, made on SessionLast's first call. An
	// atomic.Value, not a sync.Once: a Workload may be copied.
	lastBits atomic.Value
}

// ServiceModel gives a request's response time. It does not queue: see
// the package documentation.
type ServiceModel struct {
	PrefillTokensPerSec float64       // default 20,000
	DecodePerToken      time.Duration // default 20ms
}

func (m ServiceModel) withDefaults() ServiceModel {
	if m.PrefillTokensPerSec <= 0 {
		m.PrefillTokensPerSec = 20000
	}
	if m.DecodePerToken <= 0 {
		m.DecodePerToken = 20 * time.Millisecond
	}
	return m
}

// PrefillTime is the time to prefill input tokens.
func (m ServiceModel) PrefillTime(input int) time.Duration {
	m = m.withDefaults()
	return time.Duration(float64(input) / m.PrefillTokensPerSec * float64(time.Second))
}

// Time is the time from a request to its response.
func (m ServiceModel) Time(input, output int) time.Duration {
	m = m.withDefaults()
	return m.PrefillTime(input) + time.Duration(output)*m.DecodePerToken
}

// BlockTokens returns the first n tokens of block id h.
func BlockTokens(h uint64, blockSize, n int) []uint32 {
	out := make([]uint32, n)
	appendBlock(out[:0], h, blockSize, n)
	return out
}

func appendBlock(dst []uint32, h uint64, blockSize, n int) []uint32 {
	// Token j is (h×blockSize + j) mod 2^31: consecutive values, written
	// into the grown slice without a bounds check or division per token
	// (prompt tokens were the largest CPU cost of a whatif run).
	const mask = 1<<31 - 1
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	out := dst[start:]
	v := uint32(h*uint64(blockSize)) & mask
	for j := range out {
		out[j] = v
		v = (v + 1) & mask
	}
	return dst
}

// PromptTokens returns request i's prompt.
func (w *Workload) PromptTokens(i int) []uint32 {
	r := w.Req(i)
	out := make([]uint32, 0, r.InputLength)
	for b, h := range r.HashIDs {
		n := min(w.BlockSize, r.InputLength-b*w.BlockSize)
		if n <= 0 {
			break
		}
		out = appendBlock(out, h, w.BlockSize, n)
	}
	return out
}

// promptRange is request i's prompt tokens [from, to), to ≤ its length:
// PromptTokens(i)[from:to] without making the whole prompt.
func (w *Workload) promptRange(i, from, to int) []uint32 {
	r := w.Req(i)
	out := make([]uint32, 0, to-from)
	for t := from; t < to; t++ {
		b, j := t/w.BlockSize, t%w.BlockSize
		out = append(out, uint32((r.HashIDs[b]*uint64(w.BlockSize)+uint64(j))%(1<<31)))
	}
	return out
}

// OutputTokens returns request i's output: the next turn's tokens at
// those positions when it has one (the next turn holds them), else tokens
// of a block id of its own.
func (w *Workload) OutputTokens(i int) []uint32 {
	r := w.Req(i)
	if r.Next >= 0 && w.Req(r.Next).InputLength >= r.InputLength+r.OutputLength {
		return w.promptRange(r.Next, r.InputLength, r.InputLength+r.OutputLength)
	}
	out := make([]uint32, 0, r.OutputLength)
	for b := 0; len(out) < r.OutputLength; b++ {
		out = appendBlock(out, uint64(outputBlockBase+i)+uint64(b)<<20, w.BlockSize,
			min(w.BlockSize, r.OutputLength-len(out)))
	}
	return out
}

// WakeupID is the request id of request i's wake-up.
func (w *Workload) WakeupID(i int) string { return "wake-" + strconv.Itoa(i) }

func ms(epoch time.Time, at time.Duration) int64 { return epoch.Add(at).UnixMilli() }

// RequestEvent is request i as the frontend publishes it, received at
// epoch+At. With announceToolTime, a request whose response will be a
// tool call carries x-dynamo-experimental-sim-tool-call with the tool
// time in ms (otherwise hintstream has to learn it).
func (w *Workload) RequestEvent(i int, epoch time.Time, announceToolTime bool) *schemas.RequestEvent {
	return w.RequestEventTokens(i, epoch, announceToolTime, w.PromptTokens(i))
}

// RequestEventTokens is RequestEvent with its prompt's tokens made
// already (PromptTokens(i)).
func (w *Workload) RequestEventTokens(i int, epoch time.Time, announceToolTime bool, tokens []uint32) *schemas.RequestEvent {
	r := w.Req(i)
	ev := &schemas.RequestEvent{RequestID: r.ID, SessionID: r.Session, Model: w.Model,
		TokenIDs: tokens, ReceivedAtMs: ms(epoch, r.At)}
	if announceToolTime && r.ToolCall && r.Next >= 0 {
		ev.Headers = map[string]string{schemas.HeaderSimToolCall: strconv.FormatInt(max(r.ToolTime.Milliseconds(), 1), 10)}
	}
	return ev
}

// WakeupEvent is request i's wake-up, received at epoch+WakeupAt.
func (w *Workload) WakeupEvent(i int, epoch time.Time) *schemas.RequestEvent {
	return w.WakeupEventTokens(i, epoch, w.PromptTokens(i))
}

// WakeupEventTokens is WakeupEvent with its prompt's tokens made already.
func (w *Workload) WakeupEventTokens(i int, epoch time.Time, tokens []uint32) *schemas.RequestEvent {
	r := w.Req(i)
	return &schemas.RequestEvent{RequestID: w.WakeupID(i), SessionID: r.Session, Model: w.Model,
		TokenIDs: tokens, ReceivedAtMs: ms(epoch, r.WakeupAt),
		Headers: map[string]string{schemas.HeaderWakeup: "1"}}
}

// ResponseEvent is request i's response from workerID, completed at
// epoch+ResponseAt.
func (w *Workload) ResponseEvent(i int, workerID uint64, epoch time.Time) *schemas.ResponseEvent {
	r := w.Req(i)
	ev := &schemas.ResponseEvent{RequestID: r.ID, SessionID: r.Session, Model: w.Model, WorkerID: workerID,
		FinishReason: "stop", OutputTokenIDs: w.OutputTokens(i), CompletedAtMs: ms(epoch, r.ResponseAt)}
	if r.ToolCall {
		ev.FinishReason = FinishToolCalls
		ev.ToolCalls = []schemas.ToolCall{{Name: r.ToolNamed()}}
	}
	return ev
}

// ToolNamed is the tool r's response calls: r.Tool, or ToolName when
// the trace names none.
func (r *Request) ToolNamed() string {
	if r.Tool == "" {
		return ToolName
	}
	return r.Tool
}

// Stats summarises a workload.
type Stats struct {
	Requests, Sessions, NextTurns, Wakeups, ToolCalls int
	PromptTokens                                      int64
	Duration                                          time.Duration
	// Signals counts how the next turns were announced.
	Signals SignalCounts
}

// Stats counts the workload's requests, sessions and hints' triggers.
func (w *Workload) Stats() Stats {
	var s Stats
	s.Requests = w.Len()
	for i := range s.Requests {
		r := w.Req(i)
		s.PromptTokens += int64(r.InputLength)
		if r.Prev < 0 {
			s.Sessions++
		} else {
			s.NextTurns++
		}
		if r.HasWakeup {
			s.Wakeups++
		}
		if r.ToolCall {
			s.ToolCalls++
		}
		if r.FinishKnown {
			s.Signals.FactTurns++
			if r.ToolCall {
				s.Signals.FactToolCalls++
			}
		}
		if r.Prev >= 0 {
			s.Signals.add(r.signal)
		}
	}
	if n := w.NumEvents(); n > 0 {
		first := w.EventRange(0, 1)[0].At
		s.Duration = w.EventRange(n-1, n)[0].At - first
	}
	return s
}

// finish links turns, names sessions, times responses and wake-ups and
// sorts the events. Requests must be in time order with Prev set (Next is
// derived). A request whose finish is known (FinishKnown) keeps ToolCall
// as set, and its next turn is announced as sig says; for the others,
// with everyTurnTools every turn that has a next turn ends in a tool
// call, otherwise ToolCall is kept as set (and cleared on a last turn),
// and every next turn gets a wake-up lead before it.
func (w *Workload) finish(svc ServiceModel, lead time.Duration, sig Signals, everyTurnTools bool) error {
	if w.BlockSize <= 0 {
		return fmt.Errorf("%w: block size %d", ErrInvalid, w.BlockSize)
	}
	if err := sig.Validate(); err != nil {
		return err
	}
	if w.Model == "" {
		w.Model = DefaultModel
	}
	w.Service = svc.withDefaults()
	w.Signals, w.AssumedLead = sig.withDefaults(), lead
	for i := range w.Requests {
		r := &w.Requests[i]
		r.Index, r.ID, r.Next = i, "req-"+strconv.Itoa(i), -1
		if r.Prev >= i {
			return fmt.Errorf("%w: request %d follows a later one", ErrInvalid, i)
		}
	}
	for i := range w.Requests {
		r := &w.Requests[i]
		if r.Prev < 0 {
			r.Session = "s-" + strconv.Itoa(i)
		} else {
			p := &w.Requests[r.Prev]
			r.Session, r.Turn = p.Session, p.Turn+1
			if p.Next < 0 {
				p.Next = i
			}
		}
	}
	w.Events = w.Events[:0]
	g := newSignaller(sig, lead)
	for i := range w.Requests {
		r := &w.Requests[i]
		r.ResponseAt = r.At + svc.Time(r.InputLength, r.OutputLength)
		if r.Next >= 0 {
			next := &w.Requests[r.Next]
			r.ResponseAt = min(r.ResponseAt, next.At)
			if !r.FinishKnown {
				r.ToolCall = r.ToolCall || everyTurnTools
			}
		} else if !r.FinishKnown {
			r.ToolCall = false
		}
		r.ToolTime = 0
		if r.ToolCall && r.Next >= 0 {
			r.ToolTime = w.Requests[r.Next].At - r.ResponseAt
		}
		if r.ToolCall && r.Tool == "" {
			r.Tool = ToolName
		}
		w.Events = append(w.Events, Event{At: r.At, Kind: KindRequest, Request: i},
			Event{At: r.ResponseAt, Kind: KindResponse, Request: i})
	}
	for i := range w.Requests {
		r := &w.Requests[i]
		r.HasWakeup, r.WakeupAt, r.signal = false, 0, sigNone
		if r.Prev >= 0 {
			p := &w.Requests[r.Prev]
			if p.FinishKnown && p.ToolCall && p.Next == i {
				g.observe(p.Tool, r.At-p.ResponseAt)
			}
			at, kind := g.wakeup(i, r.At, prevFacts{known: p.FinishKnown, toolCall: p.ToolCall,
				responseAt: p.ResponseAt, predicted: p.predicted, tokens: p.InputLength + p.OutputLength})
			r.signal = kind
			if kind != sigNone {
				r.HasWakeup, r.WakeupAt = true, at
				w.Events = append(w.Events, Event{At: r.WakeupAt, Kind: KindWakeup, Request: i})
			}
		}
		r.predicted = 0
		if r.FinishKnown && r.ToolCall && r.Next >= 0 {
			r.predicted = g.predict(r.Tool)
		}
	}
	slices.SortStableFunc(w.Events, func(a, b Event) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Request, b.Request))
	})
	return nil
}
