package workload

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/testvectors"
)

// recordsOf yields recs one at a time, as a trace reader would.
func recordsOf(recs []Record) func() (Record, error) {
	k := 0
	return func() (Record, error) {
		if k == len(recs) {
			return Record{}, io.EOF
		}
		k++
		return recs[k-1], nil
	}
}

// spoolOf spools recs into a directory the test removes, closing the
// workload at the end.
func spoolOf(t testing.TB, recs []Record, o TraceOptions) *Workload {
	t.Helper()
	w, err := Spool(recordsOf(recs), o, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := w.Close(); err != nil {
			t.Error(err)
		}
	})
	return w
}

// sameWorkload fails unless sp, spooled, reads back as mem, built in
// memory from the same records: every request (HashIDs aside), every
// event in order, the conversations' last requests and the summary.
func sameWorkload(t testing.TB, mem, sp *Workload) {
	t.Helper()
	if sp.Len() != mem.Len() || sp.NumEvents() != mem.NumEvents() {
		t.Fatalf("spooled %d requests and %d events, in memory %d and %d", sp.Len(), sp.NumEvents(), mem.Len(), mem.NumEvents())
	}
	if sp.Model != mem.Model || sp.BlockSize != mem.BlockSize || sp.Service != mem.Service {
		t.Fatalf("spooled %q %d %+v, in memory %q %d %+v", sp.Model, sp.BlockSize, sp.Service, mem.Model, mem.BlockSize, mem.Service)
	}
	for i := range mem.Requests {
		want := mem.Requests[i]
		want.HashIDs = nil
		if got := *sp.Req(i); !reflect.DeepEqual(got, want) {
			t.Fatalf("request %d:\nspooled   %+v\nin memory %+v", i, got, want)
		}
		if sp.SessionLast(i) != mem.SessionLast(i) {
			t.Fatalf("request %d: spooled says last of its session %v, in memory %v", i, sp.SessionLast(i), mem.SessionLast(i))
		}
	}
	if got := sp.EventRange(0, sp.NumEvents()); !slices.Equal(got, mem.Events) {
		for k := range got {
			if got[k] != mem.Events[k] {
				t.Fatalf("event %d: spooled %+v, in memory %+v", k, got[k], mem.Events[k])
			}
		}
	}
	if sp.Links() != mem.Links() {
		t.Fatalf("links: spooled %+v, in memory %+v", sp.Links(), mem.Links())
	}
	if sp.Stats() != mem.Stats() {
		t.Fatalf("stats: spooled %+v, in memory %+v", sp.Stats(), mem.Stats())
	}
	if err := sp.Err(); err != nil {
		t.Fatal(err)
	}
}

// randomRecords makes n records of block size bs that exercise every
// rule of linking: turns extending an earlier prompt (some too short to
// hold its output), forks of a turn already continued, re-submissions of
// an identical prompt, prompts sharing only a short system prompt or
// ids from a tiny alphabet, named sessions, equal timestamps, zero
// outputs and lengths that are not a multiple of bs.
func randomRecords(rng *rand.Rand, n, bs int) []Record {
	recs := make([]Record, 0, n)
	var ts int64
	fresh := uint64(1000)
	freshIDs := func(ids []uint64, need int) []uint64 {
		for len(ids) < need {
			ids = append(ids, fresh)
			fresh++
		}
		return ids
	}
	for k := 0; k < n; k++ {
		if rng.IntN(3) > 0 {
			ts += int64(rng.IntN(2500))
		}
		rec := Record{Timestamp: ts}
		if rng.IntN(3) > 0 {
			rec.OutputLength = rng.IntN(2 * bs)
		}
		var p *Record
		if k > 0 {
			p = &recs[len(recs)-1-rng.IntN(min(len(recs), 30))]
		}
		switch c := rng.IntN(10); {
		case p != nil && c < 5: // a next turn or a fork of p
			rec.InputLength = max(0, p.InputLength+p.OutputLength+rng.IntN(3*bs)-bs*rng.IntN(2))
			need := (rec.InputLength + bs - 1) / bs
			rec.HashIDs = freshIDs(slices.Clone(p.HashIDs[:min(need, p.InputLength/bs)]), need)
		case p != nil && c < 7: // p again
			rec.InputLength, rec.HashIDs = p.InputLength, slices.Clone(p.HashIDs)
		case c < 8: // a shared system prompt, then its own
			rec.InputLength = bs*2 + rng.IntN(4*bs)
			rec.HashIDs = freshIDs([]uint64{1, 2}, (rec.InputLength+bs-1)/bs)
		default: // ids from a tiny alphabet: prefixes shared by chance
			rec.InputLength = rng.IntN(5 * bs)
			for range (rec.InputLength + bs - 1) / bs {
				rec.HashIDs = append(rec.HashIDs, uint64(rng.IntN(3)))
			}
		}
		if rng.IntN(5) == 0 {
			rec.HashIDs = append(rec.HashIDs, 7) // ids beyond the prompt
		}
		if rng.IntN(4) == 0 {
			rec.Session = fmt.Sprintf("user-%d", rng.IntN(6))
		}
		rec.Source = SourceRef{At: int64(k) * 100, Len: int32(k % 97), IDs: int32(len(rec.HashIDs))}
		recs = append(recs, rec)
	}
	return recs
}

// withFacts gives most records a finish_reason, some a tool, as an
// agentic trace does.
func withFacts(rng *rand.Rand, recs []Record) {
	tools := []string{"", "bash", "edit", "read"}
	for k := range recs {
		switch rng.IntN(5) {
		case 0: // no facts: the assumed rule
		case 1:
			recs[k].FinishReason = "stop"
		case 2: // a tool named without a finish_reason
			recs[k].Tool = tools[1+rng.IntN(3)]
		default:
			recs[k].FinishReason, recs[k].Tool = FinishToolCalls, tools[rng.IntN(4)]
		}
	}
}

func TestSpoolMatchesFromRecords(t *testing.T) {
	leads := []time.Duration{0, -time.Second, time.Millisecond, 500 * time.Millisecond, 3 * time.Second}
	services := []ServiceModel{{}, {PrefillTokensPerSec: 50, DecodePerToken: 30 * time.Millisecond}}
	empty, err := FromRecords(nil, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sameWorkload(t, empty, spoolOf(t, nil, TraceOptions{}))
	for seed := range uint64(120) {
		rng := rand.New(rand.NewPCG(seed, 7))
		bs := 1 + rng.IntN(6)
		recs := randomRecords(rng, 50+rng.IntN(250), bs)
		o := TraceOptions{BlockSize: bs, WakeupLead: leads[seed%5], Service: services[seed%2]}
		if seed%3 == 0 {
			o.Model = "m"
		}
		if seed%4 != 0 {
			withFacts(rng, recs)
			o.Signals = Signals{HumanShare: float64(seed%3) / 2, HumanLead: leads[(seed+1)%5]}
			if seed%4 == 2 {
				o.Signals.Tool = SignalToolEnd
			}
		}
		mem, err := FromRecords(recs, o)
		if err != nil {
			t.Fatal(err)
		}
		sp := spoolOf(t, recs, o)
		sameWorkload(t, mem, sp)
		for i, r := range recs {
			if sp.Source(i) != r.Source || mem.Source(i) != (SourceRef{}) {
				t.Fatalf("seed %d: request %d: source %+v, want %+v", seed, i, sp.Source(i), r.Source)
			}
		}
		if seed == 0 {
			s := mem.Links()
			if s.Links == 0 || s.Forks == 0 {
				t.Fatalf("the records must have links and forks: %+v", s)
			}
		}
	}
}

// Were every first key to collide, the second one alone tells the
// prefixes apart, as FromRecords' ids do.
func TestSpoolTellsCollidingKeysApart(t *testing.T) {
	collide := func(dst, ids []uint64) []uint64 {
		for range ids {
			dst = append(dst, 42)
		}
		return dst
	}
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 9))
		recs := randomRecords(rng, 150, 4)
		o := TraceOptions{BlockSize: 4}
		mem, err := FromRecords(recs, o)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := spoolWith(recordsOf(recs), o, t.TempDir(), collide)
		if err != nil {
			t.Fatal(err)
		}
		sameWorkload(t, mem, sp)
		if sp.back.(*spool).stats.prefixes != 1 {
			t.Fatalf("every prefix must share one key, %d keys", sp.back.(*spool).stats.prefixes)
		}
		if err := sp.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// traceRecords reads a Mooncake trace as ReadTrace does, with each
// record's source: the line's offset and length and its id count.
func traceRecords(t testing.TB, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := ReadRecords(f, DefaultBlockSize, false)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Records
}

// The synthetic Mooncake trace spools to what ReadTrace builds, and a
// request's ids read back through Source make the same prompt.
func TestSpoolMatchesSyntheticTrace(t *testing.T) {
	path := testvectors.TracePath(t)
	mem, err := LoadTrace(path, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	recs := traceRecords(t, path)
	sp := spoolOf(t, recs, TraceOptions{})
	sameWorkload(t, mem, sp)
	if s := mem.Links(); s.Links == 0 {
		t.Fatal("the trace must have next turns")
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, i := range []int{0, 1, sp.Len() / 2, sp.Len() - 1} {
		src := sp.Source(i)
		line := make([]byte, src.Len)
		if _, err := f.ReadAt(line, src.At); err != nil {
			t.Fatal(err)
		}
		tl, err := DecodeLine(line, DefaultBlockSize)
		if err != nil || len(tl.HashIDs) != int(src.IDs) {
			t.Fatalf("request %d: source %+v reads back %d ids (%v)", i, src, len(tl.HashIDs), err)
		}
		sp.Hold(i)
		sp.Req(i).HashIDs = tl.HashIDs
		if !slices.Equal(sp.PromptTokens(i), mem.PromptTokens(i)) {
			t.Fatalf("request %d: prompt differs once its ids are set", i)
		}
		sp.Release(i)
		if sp.Req(i).HashIDs != nil {
			t.Fatalf("request %d keeps its ids after Release", i)
		}
	}
}

// fewPrompts is n records re-submitting nPrompts 3-block prompts in
// turn, 10 ms apart with no output (so each is the next turn of the one
// before), some naming one of nSessions sessions.
func fewPrompts(n, nPrompts, nSessions int) []Record {
	recs := make([]Record, n)
	for k := range recs {
		p := uint64(k % nPrompts)
		recs[k] = Record{Timestamp: int64(k) * 10, InputLength: 3*DefaultBlockSize - 7,
			HashIDs: []uint64{p*3 + 100, p*3 + 101, p*3 + 102}}
		if k%5 == 0 {
			recs[k].Session = fmt.Sprint("s", k%nSessions)
		}
	}
	return recs
}

// What building a spooled workload holds in memory does not grow with
// the number of requests: the linker's prefixes, the named sessions and
// the pending events peak alike for 5,000 and 50,000 requests.
func TestSpoolMemoryDoesNotGrowWithRequests(t *testing.T) {
	peaks := map[int]spoolStats{}
	for _, n := range []int{5000, 50000} {
		w := spoolOf(t, fewPrompts(n, 8, 4), TraceOptions{})
		s := w.back.(*spool)
		peak := s.stats
		peak.candidates = 0 // the total grows, of course
		peaks[n] = peak
		st := w.Stats()
		if st.Requests != n || st.NextTurns < n-8-4 {
			t.Fatalf("%d requests: %+v (re-submissions must be linked)", n, st)
		}
		// The prompts' three-block prefixes are the only full-block
		// keys; the pending events are those within the 1 s lead (100
		// requests' worth) and the responses in flight.
		if s.stats.prefixes > 8 || s.stats.sessions > 4 || s.stats.pending > 3*(100+10) {
			t.Fatalf("%d requests: peak %+v", n, s.stats)
		}
		for i := range 100 {
			w.Hold(i)
			w.Hold(i)
			w.Release(i)
		}
		for i := range 100 {
			w.Release(i)
		}
		if len(s.held) != 0 {
			t.Fatalf("%d requests still held", len(s.held))
		}
	}
	if peaks[5000] != peaks[50000] {
		t.Fatalf("peaks grow with the requests: %+v for 5,000, %+v for 50,000", peaks[5000], peaks[50000])
	}
}

// repeats is n records, 10 ms apart, in the shapes that make linking
// read every earlier candidate unless it skips what cannot be the
// answer: one prompt sent again with an output (so no copy holds
// another); a prompt sent again with no output, each copy continued by
// another request before the next copy comes (so the next copy forks
// the latest, every earlier one being taken); and a prompt sent again
// with no output (each the next turn of the last).
func repeats(n int) []Record {
	recs := make([]Record, n)
	for k := range recs {
		r := Record{Timestamp: int64(k) * 10}
		switch k % 4 {
		case 0:
			r.InputLength, r.OutputLength, r.HashIDs = 2*DefaultBlockSize, 9, []uint64{1, 2}
		case 1:
			r.InputLength, r.HashIDs = 2*DefaultBlockSize, []uint64{3, 4}
		case 2:
			r.InputLength, r.OutputLength, r.HashIDs = 3*DefaultBlockSize, 1, []uint64{3, 4, uint64(10 + k)}
		case 3:
			r.InputLength, r.HashIDs = 2*DefaultBlockSize, []uint64{5, 6}
		}
		recs[k] = r
	}
	return recs
}

// Linking reads back a bounded number of candidates per request even
// where every request has a long chain of them.
func TestSpoolLinkingReadsFewCandidates(t *testing.T) {
	small := repeats(3000)
	mem, err := FromRecords(small, TraceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sp := spoolOf(t, small, TraceOptions{})
	sameWorkload(t, mem, sp)
	if l := mem.Links(); l.Forks < 700 || l.Links < 2200 {
		t.Fatalf("links %+v: the records must fork and chain", l)
	}
	const n = 6000
	w := spoolOf(t, repeats(n), TraceOptions{})
	if c := w.back.(*spool).stats.candidates; c > 2*n {
		t.Fatalf("%d candidates read for %d requests", c, n)
	}
}

// emptyDir fails unless dir holds nothing: Spool left nothing behind.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Fatalf("%s keeps %d entries (%s)", dir, len(ents), ents[0].Name())
	}
}

func TestSpoolRejectsWhatFromRecordsRejects(t *testing.T) {
	ok := Record{Timestamp: 5, InputLength: 1100, HashIDs: []uint64{1, 2, 3}}
	for name, bad := range map[string]Record{
		"time goes back": {Timestamp: 4, InputLength: 5, HashIDs: []uint64{1}},
		"negative":       {Timestamp: 5, InputLength: 5, OutputLength: -1, HashIDs: []uint64{1}},
		"too few ids":    {Timestamp: 5, InputLength: 1100, HashIDs: []uint64{1}},
	} {
		recs := []Record{ok, ok, bad, ok}
		_, memErr := FromRecords(recs, TraceOptions{})
		dir := t.TempDir()
		w, err := Spool(recordsOf(recs), TraceOptions{}, dir)
		if w != nil || err == nil || !errors.Is(err, ErrInvalid) || memErr == nil || err.Error() != memErr.Error() {
			t.Fatalf("%s: spooled %v, in memory %v", name, err, memErr)
		}
		emptyDir(t, dir)
	}
	// The records' own error comes back as it is.
	errRead := errors.New("line 3: not json")
	dir := t.TempDir()
	k := 0
	_, err := Spool(func() (Record, error) {
		if k++; k == 3 {
			return Record{}, errRead
		}
		return ok, nil
	}, TraceOptions{}, dir)
	if !errors.Is(err, errRead) {
		t.Fatalf("spool: %v, want %v", err, errRead)
	}
	emptyDir(t, dir)
	// A directory that cannot be written to.
	if _, err := Spool(recordsOf([]Record{ok}), TraceOptions{}, filepath.Join(dir, "missing")); err == nil {
		t.Fatal("spooling into a missing directory must fail")
	}
}

// Reading back never panics: an index out of range or a file that
// cannot be read gives a zero request and a sticky error.
func TestSpoolReadBackFailures(t *testing.T) {
	recs := randomRecords(rand.New(rand.NewPCG(1, 2)), 40, 4)
	dir := t.TempDir()
	w, err := Spool(recordsOf(recs), TraceOptions{BlockSize: 4}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.Req(w.Len()); r.Index != w.Len() || r.Prev != -1 || r.Next != -1 || w.Err() == nil {
		t.Fatalf("request past the end: %+v, %v", r, w.Err())
	}
	first := w.Err()
	for _, bad := range []func(){
		func() { w.Req(-1) }, func() { w.Source(-1) }, func() { w.SessionLast(w.Len()) },
		func() { w.EventRange(0, w.NumEvents()+1) }, func() { w.EventRange(3, 2) }, func() { w.Hold(-1) },
		func() { w.Release(-1) },
	} {
		bad()
	}
	if w.Err() != first || !errors.Is(first, ErrInvalid) {
		t.Fatalf("the first error must stick: %v, then %v", first, w.Err())
	}
	// Requests read back fine before the files go away.
	w2, err := Spool(recordsOf(recs), TraceOptions{BlockSize: 4}, dir)
	if err != nil {
		t.Fatal(err)
	}
	s := w2.back.(*spool)
	if r := w2.Req(5); r.Index != 5 || r.ID != "req-5" || w2.Err() != nil {
		t.Fatalf("request 5: %+v, %v", r, w2.Err())
	}
	s.reqs.Close()
	s.evs.Close()
	if r := w2.Req(5); !reflect.DeepEqual(*r, Request{Index: 5, Prev: -1, Next: -1}) || w2.Err() == nil {
		t.Fatalf("request from a closed file: %+v, %v", r, w2.Err())
	}
	if ev := w2.EventRange(0, 1); ev != nil || w2.SessionLast(1) || w2.Source(1) != (SourceRef{}) {
		t.Fatalf("reads from a closed file: %v", ev)
	}
	if err := w2.Close(); err == nil {
		t.Fatal("closing files closed already must say so")
	}
	if err := errors.Join(w.Close(), w.Close()); err != nil {
		t.Fatal(err)
	}
	emptyDir(t, dir)
}

// A held request keeps what is set on it until its last Release; a
// request not held is a fresh copy each time.
func TestSpoolHold(t *testing.T) {
	recs := randomRecords(rand.New(rand.NewPCG(3, 4)), 20, 4)
	w := spoolOf(t, recs, TraceOptions{BlockSize: 4})
	w.Req(2).HashIDs = []uint64{9}
	if w.Req(2).HashIDs != nil {
		t.Fatal("an edit to a request not held must be lost")
	}
	w.Hold(2)
	w.Hold(2)
	w.Req(2).HashIDs = recs[2].HashIDs
	w.Release(2)
	if !slices.Equal(w.Req(2).HashIDs, recs[2].HashIDs) {
		t.Fatal("held twice, released once: still held")
	}
	w.Release(2)
	if w.Req(2).HashIDs != nil {
		t.Fatal("released: read back again")
	}
}

// Goroutines read one spooled workload at once (run with -race).
func TestSpoolConcurrentReads(t *testing.T) {
	recs := randomRecords(rand.New(rand.NewPCG(5, 6)), 300, 3)
	mem, err := FromRecords(recs, TraceOptions{BlockSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	sp := spoolOf(t, recs, TraceOptions{BlockSize: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < sp.Len(); i += 4 {
				want := mem.Requests[i]
				want.HashIDs = nil
				if got := *sp.Req(i); !reflect.DeepEqual(got, want) || sp.SessionLast(i) != mem.SessionLast(i) {
					errs <- fmt.Errorf("request %d: %+v, want %+v", i, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// FuzzSpoolMatchesFromRecords: records made of arbitrary bytes, valid or
// not, spool to what FromRecords builds, or fail with its error.
func FuzzSpoolMatchesFromRecords(f *testing.F) {
	f.Add([]byte{0, 9, 2, 0, 0, 1, 11, 3, 1, 0, 0, 13, 0, 2, 1})
	f.Add([]byte{3, 8, 1, 9, 0, 0, 8, 1, 8, 3, 2, 16, 0, 5, 9})
	f.Add([]byte{1, 8, 1, 0, 3, 255, 8, 1, 0, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		const bs = 4
		var recs []Record
		var ts int64
		for ; len(b) >= 5 && len(recs) < 200; b = b[5:] {
			// A byte of 255 makes the record invalid: earlier, a
			// negative output, an id short.
			ts += int64(b[0] % 4)
			if b[0] == 255 {
				ts--
			}
			rec := Record{Timestamp: ts, InputLength: int(b[1] % 24), OutputLength: int(b[2] % 9)}
			if b[2] == 255 {
				rec.OutputLength = -1
			}
			need := (rec.InputLength + bs - 1) / bs
			if b[4] == 255 {
				need = max(need-1, 0)
			}
			if p := int(b[3]); p < len(recs) && b[3]%2 == 0 {
				prev := recs[len(recs)-1-p]
				rec.HashIDs = slices.Clone(prev.HashIDs[:min(len(prev.HashIDs), prev.InputLength/bs, need)])
			}
			for id := uint64(b[3] % 4); len(rec.HashIDs) < need; id++ {
				rec.HashIDs = append(rec.HashIDs, id)
			}
			if b[4]%3 == 0 {
				rec.Session = fmt.Sprint(b[4] % 4)
			}
			switch b[0] / 4 % 4 {
			case 1:
				rec.FinishReason = "stop"
			case 2:
				rec.FinishReason, rec.Tool = FinishToolCalls, fmt.Sprint("t", b[1]%3)
			case 3:
				rec.FinishReason = FinishToolCalls
			}
			recs = append(recs, rec)
		}
		o := TraceOptions{BlockSize: bs, WakeupLead: 2 * time.Millisecond,
			Signals: Signals{HumanShare: 0.5, HumanLead: 3 * time.Millisecond}}
		mem, memErr := FromRecords(recs, o)
		sp, err := Spool(recordsOf(recs), o, t.TempDir())
		if (err == nil) != (memErr == nil) || (err != nil && err.Error() != memErr.Error()) {
			t.Fatalf("spooled %v, in memory %v", err, memErr)
		}
		if err != nil {
			return
		}
		defer sp.Close()
		sameWorkload(t, mem, sp)
	})
}

// The spool's records give back what was put in them.
func TestSpoolRecordRoundTrip(t *testing.T) {
	r := spoolRec{at: 1, in: 2, out: 3, prev: -1, next: 5, chainPrev: 6, key2: 1<<63 + 7, key1: 1<<62 + 17, root: 8, last: 9, turn: 10,
		responseAt: 11, wakeupAt: 12, toolTime: 13, src: SourceRef{At: 14, Len: -15, IDs: 16}, toolCall: true, hasWakeup: true}
	var b [recSize]byte
	for _, fork := range []bool{false, true} {
		r.fork = fork
		r.encode(&b)
		var got spoolRec
		got.decode(&b)
		if got != r {
			t.Fatalf("read back %+v, wrote %+v", got, r)
		}
	}
	e := Event{At: time.Hour, Kind: KindWakeup, Request: 1 << 40}
	encodeEvent(b[:], e)
	if got := decodeEvent(b[:]); got != e {
		t.Fatalf("event read back %+v, wrote %+v", got, e)
	}
	if k1, k2 := prefixKeys([]uint64{1, 2}), appendPrefixKeys2(nil, []uint64{1, 2}); k1[1] == k2[1] || len(k2) != 2 {
		t.Fatal("the second key must be another function")
	}
}

// copiesOf yields n records: back-to-back copies of recs, each later in
// time and with ids past every id of the copies before it (as
// loadtest/cmd/tracecopies makes a long trace), made one at a time so
// that nothing but recs is held.
func copiesOf(recs []Record, n int) func() (Record, error) {
	var maxID uint64
	for _, r := range recs {
		for _, id := range r.HashIDs {
			maxID = max(maxID, id)
		}
	}
	span := recs[len(recs)-1].Timestamp - recs[0].Timestamp + 1000
	k := 0
	return func() (Record, error) {
		if k == n {
			return Record{}, io.EOF
		}
		c, r := k/len(recs), recs[k%len(recs)]
		k++
		ids := make([]uint64, len(r.HashIDs))
		for j, id := range r.HashIDs {
			ids[j] = id + uint64(c)*(maxID+1)
		}
		r.HashIDs, r.Timestamp = ids, r.Timestamp+int64(c)*span
		return r, nil
	}
}

// liveHeap is the heap in use after a collection.
func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkBuild100k builds a 100,000-request workload from copies of
// the synthetic trace in memory (FromRecords, the records collected
// first as ReadTrace does) and on disk (Spool, the records streamed),
// reporting the heap each keeps live per request once built:
//
//	go test -run '^$' -bench Build100k -benchtime 3x -count 3 ./whatif/workload/
func BenchmarkBuild100k(b *testing.B) {
	const n = 100_000
	recs := traceRecords(b, testvectors.TracePath(b))
	b.Run("FromRecords", func(b *testing.B) {
		var live int64
		for b.Loop() {
			before := liveHeap()
			next := copiesOf(recs, n)
			var all []Record
			for r, err := next(); err == nil; r, err = next() {
				all = append(all, r)
			}
			w, err := FromRecords(all, TraceOptions{})
			if err != nil {
				b.Fatal(err)
			}
			all = nil
			live = liveHeap() - before
			runtime.KeepAlive(w)
		}
		b.ReportMetric(float64(live)/n, "live-B/req")
	})
	b.Run("Spool", func(b *testing.B) {
		var live int64
		for b.Loop() {
			before := liveHeap()
			w, err := Spool(copiesOf(recs, n), TraceOptions{}, b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			live = liveHeap() - before
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(live)/n, "live-B/req")
	})
}
