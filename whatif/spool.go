package whatif

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/hintstream/hintstream/whatif/workload"
)

// SpoolTrace reads the Mooncake-format trace in f as workload.ReadRecords does (the
// same bad-line errors, the same skipBad counting), one line at a time,
// into a workload kept on disk under dir ("" = the system's temporary
// directory; workload.Spool): its requests and events are read back a
// stretch at a time as the play goes, and each request's block ids from
// its line in f (Source.IDs), so what the run holds grows with the
// trace's distinct blocks and prefixes (its index), not with its length.
// f must stay open until the returned Source's Workload is closed, which
// the caller does.
func SpoolTrace(f *os.File, blockSize int, skipBad bool, dir string) (Source, error) {
	return spoolTrace(f, workload.TraceOptions{BlockSize: blockSize}, skipBad, dir)
}

func spoolTrace(f *os.File, o workload.TraceOptions, skipBad bool, dir string) (Source, error) {
	blockSize := o.BlockSize
	sc := workload.NewTraceScanner(f, blockSize, skipBad)
	reuse := newReuseCounter(blockSize)
	n := 0
	next := func() (workload.Record, error) {
		rec, err := sc.Next()
		if err != nil {
			return rec, err
		}
		reuse.add(rec)
		n++
		return rec, nil
	}
	w, err := workload.Spool(next, o, dir)
	if err != nil {
		var le *workload.LineError
		if errors.As(err, &le) {
			return Source{}, le
		}
		return Source{}, err
	}
	skipped, firstSkipped := sc.Skipped()
	if n == 0 {
		w.Close()
		return Source{}, fmt.Errorf("%w: no usable request in the trace (%d bad lines skipped)", workload.ErrNoRequests, skipped)
	}
	src := Source{Name: f.Name(), Workload: w, Reusable: reuse.share(), Skipped: skipped, FirstSkipped: firstSkipped}
	var buf []byte
	src.IDs = func(i int) ([]uint64, error) {
		if i < 0 || i >= w.Len() {
			return nil, fmt.Errorf("whatif: trace record %d of %d", i, w.Len())
		}
		ids, err := readIDs(f, w.Source(i), blockSize, &buf)
		if err != nil {
			return nil, fmt.Errorf("whatif: trace record %d: %w", i, err)
		}
		return ids, nil
	}
	return src, nil
}

// readIDs reads the block ids of the line at ref back from r; it fails
// if the line no longer decodes to as many ids. buf is reused.
func readIDs(r io.ReaderAt, ref workload.SourceRef, blockSize int, buf *[]byte) ([]uint64, error) {
	b := slices.Grow((*buf)[:0], int(ref.Len))[:ref.Len]
	*buf = b
	if _, err := r.ReadAt(b, ref.At); err != nil {
		return nil, fmt.Errorf("reading its line back: %w", err)
	}
	rec, err := workload.DecodeLine(bytes.TrimSpace(b), blockSize)
	if err != nil || len(rec.HashIDs) != int(ref.IDs) {
		return nil, fmt.Errorf("its line read back differs (the file changed?): %v", err)
	}
	return slices.Clip(rec.HashIDs), nil
}
