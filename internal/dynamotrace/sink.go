package dynamotrace

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// DefaultSubject is the nats sink's subject when
// DYN_REQUEST_TRACE_NATS_SUBJECT is unset (config.rs@8e18e5d6).
const DefaultSubject = "dynamo.request_trace.v1"

// Publish publishes r on subject as the nats sink does: the record's
// serde_json bytes, no headers, a JetStream publish (so a stream must
// capture subject).
func Publish(ctx context.Context, js jetstream.JetStream, subject string, r *Record) error {
	b, err := Marshal(r)
	if err != nil {
		return err
	}
	_, err = js.Publish(ctx, subject, b)
	return err
}

// FileSink writes records as the file sink does: {"timestamp": ms since
// the sink started, "event": record} a line, plain (jsonl) or as gzip
// members (jsonl_gz, the default compression).
type FileSink struct {
	w     io.Writer
	gzip  bool
	start time.Time
	// Now is the sink's clock (time.Now when nil); tests fix it.
	Now func() time.Time
}

// NewFileSink writes to w; gzipped writes each Flush's lines as one gzip
// member, as the gzip writer appends a member per batch.
func NewFileSink(w io.Writer, gzipped bool) *FileSink {
	return &FileSink{w: w, gzip: gzipped, start: time.Now()}
}

func (s *FileSink) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Line is one record's line as the sink writes it, newline included.
func (s *FileSink) Line(r *Record) ([]byte, error) {
	ev, err := Marshal(r)
	if err != nil {
		return nil, err
	}
	ms := s.now().Sub(s.start).Milliseconds()
	if ms < 0 {
		ms = 0
	}
	// RecordEntry { timestamp: u64, event: T } in that order.
	return fmt.Appendf(nil, `{"timestamp":%d,"event":%s}`+"\n", ms, ev), nil
}

// Write writes records as one batch (one gzip member when gzipped).
func (s *FileSink) Write(records ...*Record) error {
	var batch []byte
	for _, r := range records {
		line, err := s.Line(r)
		if err != nil {
			return err
		}
		batch = append(batch, line...)
	}
	if !s.gzip {
		_, err := s.w.Write(batch)
		return err
	}
	zw := gzip.NewWriter(s.w)
	if _, err := zw.Write(batch); err != nil {
		return err
	}
	return zw.Close()
}

// WriteFile writes records to path as the file sink would, in batches of
// batch records (gzip members when gzipped; batch <= 0: one).
func WriteFile(path string, gzipped bool, batch int, records []*Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	s := NewFileSink(bw, gzipped)
	if batch <= 0 {
		batch = max(len(records), 1)
	}
	for i := 0; i < len(records); i += batch {
		if err := s.Write(records[i:min(i+batch, len(records))]...); err != nil {
			f.Close()
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
