package whatif

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/streams"
	"github.com/hintstream/hintstream/whatif/workload"
)

// Dynamo's request trace in the window (published as the nats sink does)
// reads as the same requests as its file: sessions, tool calls and
// workers from the records; at the workers' block size the cluster's KV
// events score them (Observed), at another they cannot.
func TestFromStreamsReadsTheRequestTrace(t *testing.T) {
	for _, bs := range []int{512, 16} {
		js := bus(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := requesttrace.StreamConfig(requesttrace.DefaultSubject)
		if _, _, err := streams.Ensure(ctx, js, cfg, streams.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
			t.Fatal(err)
		}
		since := time.Now()
		recs := dynamotrace.Sessions(dynamotrace.SessionsConfig{Sessions: 3, Turns: 3, BlockSize: bs,
			StartMs: uint64(since.UnixMilli()), Workers: 2, Payloads: true})
		for _, r := range recs {
			if err := dynamotrace.Publish(ctx, js, requesttrace.DefaultSubject, r); err != nil {
				t.Fatal(err)
			}
		}
		win := Window{Streams: streams.DefaultSet(), RequestTrace: cfg, Since: since}
		ss, err := FromStreams(ctx, js, win)
		if err != nil {
			t.Fatal(err)
		}
		if len(ss.Records) != 9 || ss.BlockSize != bs || ss.Events["request_trace"] != len(recs) || ss.Model != "Qwen/Qwen3-8B" {
			t.Fatalf("block %d: %d records at %d-token blocks, events %v, model %q", bs, len(ss.Records), ss.BlockSize, ss.Events, ss.Model)
		}
		if (ss.Source.Observed != nil) != (bs == 512) {
			t.Fatalf("block %d: observed %+v", bs, ss.Source.Observed)
		}
		if bs == 512 && ss.Observed.Requests != 9 {
			t.Fatalf("observed %d served requests, want 9", ss.Observed.Requests)
		}
		w, err := workload.FromRecords(ss.Records, workload.TraceOptions{BlockSize: ss.BlockSize})
		if err != nil {
			t.Fatal(err)
		}
		if s := w.Stats(); s.Sessions != 3 || s.NextTurns != 6 {
			t.Fatalf("block %d: %+v", bs, s)
		}
	}
}

// A file the stand-in wrote as the file sink does plays through Run: the
// report has its requests, conversations and next turns.
func TestRunPlaysARequestTraceFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.jsonl.gz")
	if err := dynamotrace.WriteFile(path, true, 5, dynamotrace.Sessions(dynamotrace.SessionsConfig{Sessions: 4,
		Turns: 3, BlockSize: 16, StartMs: 1_700_000_000_000, Workers: 2})); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, err := ReadRequestTrace(f, path, false)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultCluster()
	c.BlockSize, c.Workers = ts.BlockSize, ts.Workers
	pol, err := SelectPolicies("today's")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), ts.Source, Options{Cluster: c, Policies: pol})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 12 || rep.Conversations != 4 || rep.NextTurns != 8 || rep.Cluster.BlockSize != 16 || rep.Cluster.Workers != 2 {
		t.Fatalf("report: %d requests, %d conversations, %d next turns, block %d, %d workers", rep.Requests,
			rep.Conversations, rep.NextTurns, rep.Cluster.BlockSize, rep.Cluster.Workers)
	}
}

// Without a worker registry (a Dynamo deployment registers none with
// hintstream), the request trace gives the window its workers and block
// size; without it either, the registry's absence is the error.
func TestFromStreamsTraceWithoutRegistry(t *testing.T) {
	js := embedded(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := requesttrace.StreamConfig(requesttrace.DefaultSubject)
	win := Window{Streams: streams.DefaultSet(), RequestTrace: cfg, Since: time.Now()}
	if _, err := FromStreams(ctx, js, win); err == nil || !strings.Contains(err.Error(), "registry bucket") {
		t.Fatalf("no registry, no trace: %v", err)
	}
	if _, _, err := streams.Ensure(ctx, js, cfg, streams.WithLogger(slog.New(slog.DiscardHandler))); err != nil {
		t.Fatal(err)
	}
	for _, r := range dynamotrace.Sessions(dynamotrace.SessionsConfig{Sessions: 2, Turns: 2, BlockSize: 64,
		StartMs: uint64(win.Since.UnixMilli()), Workers: 2}) {
		if err := dynamotrace.Publish(ctx, js, requesttrace.DefaultSubject, r); err != nil {
			t.Fatal(err)
		}
	}
	ss, err := FromStreams(ctx, js, win)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss.Records) != 4 || ss.Workers != 2 || ss.BlockSize != 64 || ss.Source.Observed != nil {
		t.Fatalf("%d records, %d workers, block %d, observed %v", len(ss.Records), ss.Workers, ss.BlockSize, ss.Source.Observed)
	}
}
