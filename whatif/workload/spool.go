package workload

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// SourceRef is where a record came from (e.g. a trace line), opaque to
// this package: a spooled workload keeps it per request on disk and gives
// it back (Source), so that a caller can read a request's ids again
// instead of anything holding them all.
type SourceRef struct {
	At       int64
	Len, IDs int32
}

// Spool builds the workload FromRecords would build from the records next
// yields (io.EOF ends them; any other error is returned), keeping it on
// disk in a temporary directory under dir ("" = os.TempDir()), removed by
// Close. As in FromRecords, o.Skip and o.Limit are not applied.
//
// Memory holds nothing per request: the linker keeps, per distinct
// full-block prefix, only the latest request with it (older ones are
// chained on disk), the latest request of each named session, and the
// events not yet known to be next in play order (those within the
// wake-up lead and responses in flight). Requests read back have no
// HashIDs: the caller reads them again through Source and sets them on
// a held request (Hold).
//
// Where FromRecords compares ids to tell a shared prefix from a key
// collision, Spool compares a second, independent 64-bit key of the
// prefix: only a collision of both keys could make them differ.
func Spool(next func() (Record, error), o TraceOptions, dir string) (*Workload, error) {
	return spoolWith(next, o, dir, appendPrefixKeys)
}

// spoolWith is Spool with the linker's first prefix key made by keys1
// (a test makes every key collide).
func spoolWith(next func() (Record, error), o TraceOptions, dir string, keys1 func(dst, ids []uint64) []uint64) (w *Workload, err error) {
	o = o.withDefaults()
	if err := o.Signals.Validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		dir = os.TempDir()
	}
	tmp, err := os.MkdirTemp(dir, "workload-spool-")
	if err != nil {
		return nil, fmt.Errorf("workload: spool: %w", err)
	}
	s := &spool{dir: tmp, held: map[int]*heldRequest{}, tools: []string{""}, toolIDs: map[string]uint32{}}
	defer func() {
		if err != nil {
			// Whatever went wrong, nothing is left behind; the first
			// error is the one to report.
			_ = s.close()
		}
	}()
	if s.reqs, err = os.Create(filepath.Join(tmp, "requests")); err != nil {
		return nil, fmt.Errorf("workload: spool: %w", err)
	}
	if s.evs, err = os.Create(filepath.Join(tmp, "events")); err != nil {
		return nil, fmt.Errorf("workload: spool: %w", err)
	}
	if err = s.link(next, o.BlockSize, keys1); err != nil {
		return nil, err
	}
	if err = s.finish(o.Service, o.WakeupLead, o.Signals); err != nil {
		return nil, err
	}
	w = &Workload{Model: o.Model, BlockSize: o.BlockSize, Service: o.Service.withDefaults(), back: s,
		Signals: o.Signals.withDefaults(), AssumedLead: o.WakeupLead}
	if w.Model == "" {
		w.Model = DefaultModel
	}
	return w, nil
}

// spool is a workload kept in two files: requests (spoolRec records) and
// events (in play order).
type spool struct {
	dir        string
	reqs, evs  *os.File
	n, nEvents int
	// held are the requests kept in memory between Hold and Release,
	// with how many Holds each has; read without a lock, as Hold and
	// Release are not called while anything reads.
	held map[int]*heldRequest

	mu       sync.Mutex // guards firstErr and closed
	firstErr error
	closed   bool

	evMu  sync.Mutex // guards the events' buffers
	evBuf []byte
	evOut []Event

	// tools are the tool names the trace gave (index 0: none), toolIDs
	// their indices while linking; at most maxSpoolTools.
	tools   []string
	toolIDs map[string]uint32
	// anyKnown: some record gave its finish (Signals apply).
	anyKnown bool

	// stats are what building held in memory at most and how much it
	// read back (spool_test.go checks they stay bounded).
	stats spoolStats
}

type heldRequest struct {
	r     *Request
	holds int
}

// spoolStats are the most entries building held at once (prefix keys,
// named sessions, events waiting for their place) and the candidate
// previous turns the linker read back.
type spoolStats struct {
	prefixes, sessions, pending int
	candidates                  int64
}

// fail records the first error reading back met; later reads return
// zero values until the caller checks Err.
func (s *spool) fail(err error) {
	s.mu.Lock()
	if s.firstErr == nil {
		s.firstErr = err
	}
	s.mu.Unlock()
}

func (s *spool) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.firstErr
}

func (s *spool) len() int       { return s.n }
func (s *spool) numEvents() int { return s.nEvents }

func (s *spool) readRec(i int64, r *spoolRec) error {
	var b [recSize]byte
	if n, err := s.reqs.ReadAt(b[:], i*recSize); n < recSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("workload: spool: reading request %d: %w", i, err)
	}
	r.decode(&b)
	return nil
}

func (s *spool) writeRec(i int64, r *spoolRec) error {
	var b [recSize]byte
	r.encode(&b)
	if _, err := s.reqs.WriteAt(b[:], i*recSize); err != nil {
		return fmt.Errorf("workload: spool: writing request %d: %w", i, err)
	}
	return nil
}

// field reads one 8-byte field of request i.
func (s *spool) field(i int64, off int) (int64, error) {
	var b [8]byte
	if n, err := s.reqs.ReadAt(b[:], i*recSize+int64(off)); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, fmt.Errorf("workload: spool: reading request %d: %w", i, err)
	}
	return int64(le.Uint64(b[:])), nil
}

// patch writes one 8-byte field of request i in place.
func (s *spool) patch(i int64, off int, v int64) error {
	var b [8]byte
	le.PutUint64(b[:], uint64(v))
	if _, err := s.reqs.WriteAt(b[:], i*recSize+int64(off)); err != nil {
		return fmt.Errorf("workload: spool: writing request %d: %w", i, err)
	}
	return nil
}

// req returns the held request i, else a fresh copy read back; on an
// index out of range or a failed read, a zero request (its own index,
// no neighbours) and a sticky error.
func (s *spool) req(i int) *Request {
	if h, ok := s.held[i]; ok {
		return h.r
	}
	zero := &Request{Index: i, Prev: -1, Next: -1}
	if i < 0 || i >= s.n {
		s.fail(fmt.Errorf("%w: request %d of %d", ErrInvalid, i, s.n))
		return zero
	}
	var r spoolRec
	if err := s.readRec(int64(i), &r); err != nil {
		s.fail(err)
		return zero
	}
	req := r.request(i)
	if r.toolCall {
		req.Tool = ToolName
		if int(r.tool) < len(s.tools) && r.tool > 0 {
			req.Tool = s.tools[r.tool]
		}
	}
	return req
}

// maxSpoolTools bounds the distinct tool names a spooled workload keeps
// (tooltime's own bound on names it tracks); later names are unnamed.
const maxSpoolTools = 1024

// toolID is name's index in s.tools, added if new and there is room.
func (s *spool) toolID(name string) uint32 {
	if name == "" {
		return 0
	}
	if id, ok := s.toolIDs[name]; ok {
		return id
	}
	if len(s.tools) > maxSpoolTools {
		return 0
	}
	id := uint32(len(s.tools))
	s.tools = append(s.tools, name)
	s.toolIDs[name] = id
	return id
}

// request is the Request r describes; HashIDs are not kept.
func (r *spoolRec) request(i int) *Request {
	return &Request{FinishKnown: r.finishKnown, signal: r.signal, predicted: time.Duration(r.predicted), Index: i, ID: "req-" + strconv.Itoa(i), Session: "s-" + strconv.FormatInt(r.root, 10),
		Turn: int(r.turn), At: time.Duration(r.at), ResponseAt: time.Duration(r.responseAt),
		HasWakeup: r.hasWakeup, WakeupAt: time.Duration(r.wakeupAt),
		InputLength: int(r.in), OutputLength: int(r.out), Prev: int(r.prev), Next: int(r.next),
		Fork: r.fork, ToolCall: r.toolCall, ToolTime: time.Duration(r.toolTime)}
}

// events reads events [from, to) into a buffer reused by the next call.
func (s *spool) events(from, to int) []Event {
	if from < 0 || to > s.nEvents || from > to {
		s.fail(fmt.Errorf("%w: events [%d, %d) of %d", ErrInvalid, from, to, s.nEvents))
		return nil
	}
	s.evMu.Lock()
	defer s.evMu.Unlock()
	n := to - from
	if cap(s.evBuf) < n*evSize {
		s.evBuf = make([]byte, n*evSize)
		s.evOut = make([]Event, n)
	}
	b, out := s.evBuf[:n*evSize], s.evOut[:n]
	if got, err := s.evs.ReadAt(b, int64(from)*evSize); got < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		s.fail(fmt.Errorf("workload: spool: reading events [%d, %d): %w", from, to, err))
		return nil
	}
	for k := range out {
		out[k] = decodeEvent(b[k*evSize:])
	}
	return out
}

func (s *spool) hold(i int) {
	if h, ok := s.held[i]; ok {
		h.holds++
		return
	}
	r := s.req(i)
	if i < 0 || i >= s.n {
		return
	}
	s.held[i] = &heldRequest{r: r, holds: 1}
}

func (s *spool) release(i int) {
	h, ok := s.held[i]
	if !ok {
		return
	}
	if h.holds--; h.holds <= 0 {
		delete(s.held, i)
	}
}

// close closes both files and removes the directory; a second call does
// nothing.
func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, f := range []*os.File{s.reqs, s.evs} {
		if f != nil {
			if err := f.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("workload: spool: %w", err)
	}
	return nil
}

// Source returns request i's Record.Source (zero for a workload built in
// memory, or when reading it back failed: see Err).
func (w *Workload) Source(i int) SourceRef {
	s, ok := w.back.(*spool)
	if !ok {
		return SourceRef{}
	}
	if i < 0 || i >= s.n {
		s.fail(fmt.Errorf("%w: request %d of %d", ErrInvalid, i, s.n))
		return SourceRef{}
	}
	var r spoolRec
	if err := s.readRec(int64(i), &r); err != nil {
		s.fail(err)
		return SourceRef{}
	}
	return r.src
}

// SessionLast reports whether request i is its conversation's last
// request (no later request has its Session); false for an index out of
// range.
func (w *Workload) SessionLast(i int) bool {
	if s, ok := w.back.(*spool); ok {
		return s.sessionLast(i)
	}
	if i < 0 || i >= len(w.Requests) {
		return false
	}
	bits, _ := w.lastBits.Load().([]uint64)
	if len(bits)*64 < len(w.Requests) {
		// Made once, on first use, from the sessions as they are then;
		// goroutines that race here make the same bits.
		last := map[string]int{}
		for k := range w.Requests {
			last[w.Requests[k].Session] = k
		}
		bits = make([]uint64, (len(w.Requests)+63)/64)
		for _, k := range last {
			bits[k/64] |= 1 << (k % 64)
		}
		w.lastBits.Store(bits)
	}
	return bits[i/64]&(1<<(i%64)) != 0
}

// sessionLast reads request i's conversation's first request, which
// keeps the conversation's latest request.
func (s *spool) sessionLast(i int) bool {
	if i < 0 || i >= s.n {
		s.fail(fmt.Errorf("%w: request %d of %d", ErrInvalid, i, s.n))
		return false
	}
	root, err := s.field(int64(i), offRoot)
	if err != nil {
		s.fail(err)
		return false
	}
	last, err := s.field(root, offLast)
	if err != nil {
		s.fail(err)
		return false
	}
	return last == int64(i)
}
