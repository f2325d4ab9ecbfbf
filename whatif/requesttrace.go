package whatif

import (
	"fmt"
	"io"

	"github.com/hintstream/hintstream/whatif/workload"
)

// TraceSource is a request-trace file read for a run: its requests, and
// the block size and serving workers its records give.
type TraceSource struct {
	Source
	// BlockSize is the records' trace_block_size: their block ids are
	// sequence hashes at that size, so the run's block size is it.
	BlockSize int
	// Workers are the distinct workers (and dp ranks) that served them.
	Workers int
	// ToolEvents and NoReplay count the harness's tool records and the
	// request_end records without a full block (see
	// workload.RequestTraceRead).
	ToolEvents, NoReplay int
}

// ReadRequestTrace reads a file of Dynamo request-trace records (what
// the file sink writes, plain or gzip; workload.ReadRequestTrace) into a
// Source: the whole trace is held in memory, as a stream window is.
func ReadRequestTrace(r io.Reader, name string, skipBad bool) (TraceSource, error) {
	rd, err := workload.ReadRequestTrace(r, skipBad)
	if err != nil {
		return TraceSource{}, fmt.Errorf("%s: %w", name, err)
	}
	return TraceSource{Source: Source{Name: name, Records: rd.Records, Skipped: rd.Skipped,
		FirstSkipped: rd.FirstSkipped, Model: rd.Model}, BlockSize: rd.BlockSize, Workers: rd.Workers,
		ToolEvents: rd.ToolEvents, NoReplay: rd.NoReplay}, nil
}
