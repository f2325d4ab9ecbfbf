package whatif

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/whatif/workload"
)

// tracedWindow is what readRequestTrace added to a window's records.
type tracedWindow struct {
	first    int // index of the first record it added
	n        int
	served   []uint64
	workers  int  // distinct serving workers
	mismatch bool // trace_block_size is not the workers' block size
}

// readRequestTrace reads the window's request-trace records (Dynamo's
// request_end, with what request_payload and the tool records add;
// workload.RequestTraceBuilder) and appends their requests to out's
// records. When the window holds no request event, the trace's block
// size is the run's; one that differs from the workers' cannot be scored
// against their KV events (no Observed).
func readRequestTrace(ctx context.Context, js jetstream.JetStream, w Window, out *StreamSource,
	bad func(kind string, seq uint64, err error) error) (tracedWindow, error) {
	t := tracedWindow{first: len(out.Records)}
	if w.RequestTrace.Name == "" {
		return t, nil
	}
	var b workload.RequestTraceBuilder
	lim := requesttrace.Limits{MaxBytes: w.Limits.MaxBytes}
	err := readWindow(ctx, js, w.RequestTrace, w, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		out.Events["request_trace"]++
		rec, err := lim.Decode(m.Data())
		if err == nil {
			err = b.Add(rec)
		}
		if err != nil {
			return bad("request_trace", md.Sequence.Stream, err)
		}
		return nil
	})
	if err != nil {
		return t, err
	}
	rd, err := b.Finish()
	if err != nil {
		return t, nil // no request_end with block ids in the window
	}
	if len(out.Records) > 0 && rd.BlockSize != out.BlockSize {
		return t, fmt.Errorf("whatif: the request trace's trace_block_size %d is not the workers' block size %d, "+
			"and the window holds request events at the latter: one run has one block size", rd.BlockSize, out.BlockSize)
	}
	t.mismatch = rd.BlockSize != out.BlockSize
	out.BlockSize = rd.BlockSize
	out.Records = append(out.Records, rd.Records...)
	t.n, t.served, t.workers = len(rd.Records), rd.ServedBy, rd.Workers
	if out.Model == "" {
		out.Model = rd.Model
	}
	return t, nil
}

// observe fills the observer's entries of the trace's records and puts
// every record, with its entry, in time order (a window that holds both
// request events and request-trace records has each in its own order).
func (t tracedWindow) observe(recs []workload.Record, obs []obsRec) {
	for k := range t.n {
		i := t.first + k
		r := recs[i]
		obs[i] = obsRec{at: r.Timestamp, full: r.HashIDs, prompt: r.InputLength, worker: t.served[k]}
	}
	if t.n == 0 || t.first == 0 {
		return
	}
	idx := make([]int, len(recs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(recs[a].Timestamp, recs[b].Timestamp) })
	sortedR, sortedO := make([]workload.Record, len(recs)), make([]obsRec, len(obs))
	for k, i := range idx {
		sortedR[k], sortedO[k] = recs[i], obs[i]
	}
	copy(recs, sortedR)
	copy(obs, sortedO)
}
