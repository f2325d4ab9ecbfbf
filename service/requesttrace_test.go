package service

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/agents"
	"github.com/hintstream/hintstream/ingest/requesttrace"
	"github.com/hintstream/hintstream/internal/dynamotrace"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
)

func traceTurn(id, session, trigger, finish string, tools []string, at uint64) dynamotrace.Turn {
	p := make([]uint32, 100)
	for i := range p {
		p[i] = uint32(i)
	}
	return dynamotrace.Turn{RequestID: id, Session: session, Trigger: trigger, Model: "m", Prompt: p, BlockSize: 16,
		Worker: 7, DpRank: 1, FinishReason: finish, ToolCalls: tools, ReceivedMs: at, TotalMs: 250, OutputTokens: 20}
}

// TestRunReadsDynamoRequestTrace: with --source dynamo, records published
// as Dynamo's nats sink publishes them (the stand-in) on a real server
// reach the agent tracker (its programs, the tool times it learns) and
// the engine's response path, in a stream run created; records that can
// never be processed are counted by reason and dead-lettered.
func TestRunReadsDynamoRequestTrace(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(60*time.Second))
	defer cancel()
	acfg := agents.DefaultConfig()
	rt := &RequestTraceConfig{Subject: requesttrace.DefaultSubject, Stream: requesttrace.DefaultTraceStream,
		Durable: "test-request-trace", Limits: requesttrace.Limits{MaxHashes: 100}}
	svc := New(Config{NATSURL: srv.ClientURL(), Agents: &acfg, RequestTrace: rt, NoAffinity: true, Logger: quietLog})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	if _, err := js.Stream(ctx, requesttrace.DefaultTraceStream); err != nil {
		t.Fatalf("no stream created on the sink's subject: %v", err)
	}

	now := uint64(time.Now().UnixMilli())
	var recs []*dynamotrace.Record
	for i := range 3 {
		s := fmt.Sprintf("sess-%d", i)
		recs = append(recs,
			traceTurn(s+"-1", s, "user_message", "tool_calls", []string{"web_search"}, now-10_000).RequestEnd(),
			dynamotrace.Tool("tool_start", s, s+"-call", "web_search", now-9_000, 0),
			dynamotrace.Tool("tool_end", s, s+"-call", "web_search", now-9_000, now-6_000),
			traceTurn(s+"-2", s, "tool_result", "stop", nil, now-5_000).RequestPayload([]byte(`[{"role":"tool","tool_call_id":"c"}]`),
				map[string]string{"x-request-id": s}),
			traceTurn(s+"-2", s, "tool_result", "stop", nil, now-5_000).RequestEnd())
	}
	for _, r := range recs {
		if err := dynamotrace.Publish(ctx, js, requesttrace.DefaultSubject, r); err != nil {
			t.Fatal(err)
		}
	}
	m := svc.Counters.RequestTrace
	natstest.Eventually(t, 10*time.Second, func() bool { return m.Records.Total() == uint64(len(recs)) },
		"%d records decoded", len(recs))
	if got := m.Records.Value("request_end"); got != 6 {
		t.Fatalf("%d request_end records, want 6", got)
	}
	if got := svc.agents.Programs(); got != 3 {
		t.Fatalf("the tracker follows %d programs, want 3 (one per session)", got)
	}
	var learned bool
	for _, st := range svc.agents.Learner().Snapshot() {
		if st.Tool == "web_search" {
			learned = st.Samples == 3 && st.P50 == 3*time.Second
		}
	}
	if !learned {
		t.Fatalf("tool times learned: %+v, want 3 samples of 3s for web_search", svc.agents.Learner().Snapshot())
	}
	// 100 tokens at 16: each request_end's seventh hash is a partial block's.
	if got := m.PartialTails.Value(); got != 6 {
		t.Fatalf("%d partial tails dropped, want 6", got)
	}

	good, _ := dynamotrace.Marshal(traceTurn("r", "s", "", "stop", nil, now).RequestEnd())
	long := traceTurn("r-long", "s", "", "stop", nil, now)
	long.Prompt = make([]uint32, 16*101)
	longRec, _ := dynamotrace.Marshal(long.RequestEnd())
	bad := map[string][]byte{
		requesttrace.ReasonSchema:                        []byte(strings.Replace(string(good), "trace.v1", "trace.v2", 1)),
		requesttrace.ReasonEventType:                     []byte(strings.Replace(string(good), `"request_end"`, `"request_start"`, 1)),
		"missing request_id":                             []byte(strings.Replace(string(good), `"request_id":"r",`, "", 1)),
		"wrong type for request.worker.decode_worker_id": []byte(strings.Replace(string(good), `"decode_worker_id":7`, `"decode_worker_id":-7`, 1)),
		requesttrace.ReasonTooManyHashes:                 longRec,
		requesttrace.ReasonNotObject:                     []byte(`"just a string"`),
	}
	for _, b := range bad {
		if _, err := js.Publish(ctx, requesttrace.DefaultSubject, b); err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return m.Malformed.Total() == uint64(len(bad)) },
		"%d records dead-lettered", len(bad))
	for reason := range bad {
		if got := m.Malformed.Value(reason); got != 1 {
			t.Errorf("malformed{reason=%q} = %d, want 1", reason, got)
		}
	}
	dlq, err := js.CreateOrUpdateConsumer(ctx, "HINTSTREAM_DLQ", jetstream.ConsumerConfig{
		FilterSubject: consumers.DefaultDeadLetterPrefix + "." + requesttrace.DeadLetterKind})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := dlq.Fetch(len(bad), jetstream.FetchMaxWait(natstest.Within(5*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for msg := range batch.Messages() {
		reason := msg.Headers().Get(consumers.HeaderDLQReason)
		if want, ok := bad[reason]; !ok || string(want) != string(msg.Data()) {
			t.Errorf("dead letter with reason %q: %.60s", reason, msg.Data())
		}
		seen[reason] = true
	}
	if len(seen) != len(bad) {
		t.Fatalf("dead letters for %d reasons, want %d", len(seen), len(bad))
	}
}

// An operator's stream on the subject is attached as it is, not changed.
func TestRequestTraceAttachesOperatorsStream(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	own := jetstream.StreamConfig{Name: "OPS_TRACE", Subjects: []string{"dynamo.>"}, MaxAge: 3 * time.Minute,
		Storage: jetstream.MemoryStorage}
	if _, err := js.CreateStream(ctx, own); err != nil {
		t.Fatal(err)
	}
	acfg := agents.DefaultConfig()
	svc := New(Config{NATSURL: srv.ClientURL(), Agents: &acfg, NoAffinity: true, Logger: quietLog,
		RequestTrace: &RequestTraceConfig{Subject: requesttrace.DefaultSubject, Stream: requesttrace.DefaultTraceStream}})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	if _, err := js.Stream(ctx, requesttrace.DefaultTraceStream); err == nil {
		t.Fatal("a second stream created beside the operator's")
	}
	st, err := js.Stream(ctx, "OPS_TRACE")
	if err != nil {
		t.Fatal(err)
	}
	if c := st.CachedInfo().Config; c.MaxAge != own.MaxAge || len(c.Subjects) != 1 || c.Subjects[0] != "dynamo.>" {
		t.Fatalf("operator's stream changed: %+v", c)
	}
	if err := dynamotrace.Publish(ctx, js, requesttrace.DefaultSubject,
		dynamotrace.Tool("tool_end", "s", "c", "grep", 1, 2)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return svc.Counters.RequestTrace.Records.Value("tool_end") == 1 },
		"the record read from the operator's stream")
}

// A request_end served by a worker the registry does not know is counted
// ("unknown worker") and dead-lettered; one by a registered worker is
// taken. With no worker registered at all, nothing is refused (the first
// test).
func TestRequestTraceRefusesUnknownWorker(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	svc := New(Config{NATSURL: srv.ClientURL(), NoAffinity: true, Logger: quietLog,
		RequestTrace: &RequestTraceConfig{Subject: requesttrace.DefaultSubject, Stream: requesttrace.DefaultTraceStream}})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 7, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:1"}}); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool { _, ok := svc.Registry().Get(7); return ok }, "worker 7 registered")
	known := traceTurn("r-7", "s", "", "stop", nil, uint64(time.Now().UnixMilli()))
	unknown := known
	unknown.RequestID, unknown.Worker = "r-99", 99
	for _, turn := range []dynamotrace.Turn{unknown, known} {
		if err := dynamotrace.Publish(ctx, js, requesttrace.DefaultSubject, turn.RequestEnd()); err != nil {
			t.Fatal(err)
		}
	}
	m := svc.Counters.RequestTrace
	natstest.Eventually(t, 10*time.Second, func() bool { return m.Records.Total() == 2 }, "2 records decoded")
	natstest.Eventually(t, 10*time.Second, func() bool { return m.Malformed.Total() == 1 }, "1 record refused")
	if got := m.Malformed.Value(requesttrace.ReasonUnknownWorker); got != 1 {
		t.Fatalf("unknown worker refusals: %d, want 1 (%v)", got, m.Malformed.Values())
	}
}

func TestSourceFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" : accepted
	}{
		{[]string{"--source", "dynamo", "--group", "g", "--request-trace-max-hashes", "9"}, ""},
		{[]string{"--source", "hintstream"}, ""},
		{[]string{"--source", "vllm"}, `--source "vllm": want hintstream or dynamo`},
		{[]string{"--source", "dynamo", "--request-trace-max-hashes", "0"}, "--request-trace-max-hashes must be at least 1"},
		{[]string{"--source", "dynamo", "--request-trace-subject", ""}, "must not be empty"},
		{[]string{"--source", "dynamo", "--request-trace-stream", "a.b"}, "--request-trace-stream"},
	} {
		var cfg Config
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		cfg.RegisterFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := cfg.ApplyFlags()
		if err == nil {
			err = cfg.validateNamesAndEndpoints()
		}
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q: %v, want %q", c.args, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		rt := cfg.RequestTrace
		if c.args[1] == SourceHintstream {
			if rt != nil {
				t.Fatalf("--source hintstream set %+v", rt)
			}
			continue
		}
		if rt == nil || rt.Subject != requesttrace.DefaultSubject || rt.Stream != requesttrace.DefaultTraceStream ||
			rt.Durable != "g-request-trace" || rt.Limits.MaxHashes != 9 {
			t.Fatalf("%q: %+v", c.args, rt)
		}
	}
}
