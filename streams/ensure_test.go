package streams

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// logBuf collects log lines so tests can check what operators are told.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newLogger() (*slog.Logger, *logBuf) {
	b := &logBuf{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

func setup(t *testing.T) (context.Context, jetstream.JetStream) {
	t.Helper()
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx, js
}

func streamConfig(t *testing.T, ctx context.Context, js jetstream.JetStream, name string) jetstream.StreamConfig {
	t.Helper()
	st, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatalf("stream %s: %v", name, err)
	}
	return st.CachedInfo().Config
}

func mustCreate(t *testing.T, ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) {
	t.Helper()
	if _, err := js.CreateStream(ctx, cfg); err != nil {
		t.Fatalf("create %s: %v", cfg.Name, err)
	}
}

func TestEnsureCreatesWhenAbsent(t *testing.T) {
	ctx, js := setup(t)
	cfg := DefaultSet().Load
	st, oc, err := Ensure(ctx, js, cfg)
	if err != nil || oc != Created {
		t.Fatalf("Ensure = %v, %v; want Created", oc, err)
	}
	got := st.CachedInfo().Config
	if got.Name != "KV_LOAD" || !slices.Equal(got.Subjects, []string{"kv.load.>"}) ||
		got.MaxAge != time.Hour || got.Storage != jetstream.FileStorage ||
		got.Replicas != 1 || got.Duplicates != 2*time.Minute || got.MaxBytes != -1 {
		t.Fatalf("created config %+v", got)
	}
}

func TestEnsureAttachesSameConfig(t *testing.T) {
	ctx, js := setup(t)
	cfg := DefaultSet().Requests
	if _, oc, err := Ensure(ctx, js, cfg); err != nil || oc != Created {
		t.Fatalf("first Ensure = %v, %v", oc, err)
	}
	before := streamConfig(t, ctx, js, cfg.Name)
	log, buf := newLogger()
	_, oc, err := Ensure(ctx, js, cfg, WithLogger(log), WithUpdate(true))
	if err != nil || oc != Attached {
		t.Fatalf("second Ensure = %v, %v; want Attached", oc, err)
	}
	after := streamConfig(t, ctx, js, cfg.Name)
	if !slices.Equal(before.Subjects, after.Subjects) || before.MaxAge != after.MaxAge || before.Duplicates != after.Duplicates {
		t.Fatalf("config changed: %+v -> %+v", before, after)
	}
	if strings.Contains(buf.String(), "differing") {
		t.Fatalf("identical config reported as differing: %s", buf)
	}
}

func TestEnsureAttachesDifferingConfigUnchanged(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{
		Name: "LLM_REQUESTS", Subjects: []string{"llm.requests.>"},
		MaxAge: 24 * time.Hour, Storage: jetstream.MemoryStorage,
	})
	log, buf := newLogger()
	_, oc, err := Ensure(ctx, js, DefaultSet().Requests, WithLogger(log), WithUpdate(true))
	if err != nil || oc != Attached {
		t.Fatalf("Ensure = %v, %v; want Attached", oc, err)
	}
	got := streamConfig(t, ctx, js, "LLM_REQUESTS")
	if got.MaxAge != 24*time.Hour || got.Storage != jetstream.MemoryStorage {
		t.Fatalf("existing stream changed: MaxAge %v storage %v", got.MaxAge, got.Storage)
	}
	logs := buf.String()
	for _, want := range []string{"level=INFO", "attached with differing config", "max_age", "storage"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
}

func TestEnsureMissingSubjectIsMismatch(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "LLM", Subjects: []string{"llm.requests.>"}})
	cfg := Config{Name: "LLM", Subjects: []string{"llm.requests.>", "llm.responses.>"}}
	st, oc, err := Ensure(ctx, js, cfg)
	if !errors.Is(err, ErrConfigMismatch) || st != nil || oc != 0 {
		t.Fatalf("Ensure = %v, %v, %v; want ErrConfigMismatch", st, oc, err)
	}
	for _, want := range []string{`"LLM"`, `"llm.requests.>"`, `not ["llm.responses.>"]`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %s", err, want)
		}
	}
	if got := streamConfig(t, ctx, js, "LLM").Subjects; !slices.Equal(got, []string{"llm.requests.>"}) {
		t.Fatalf("subjects changed to %v", got)
	}
}

func TestEnsureWithUpdateAddsSubject(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "LLM", Subjects: []string{"llm.requests.>"}, MaxAge: time.Hour})
	log, buf := newLogger()
	cfg := Config{Name: "LLM", Subjects: []string{"llm.requests.>", "llm.responses.>"}}
	_, oc, err := Ensure(ctx, js, cfg, WithUpdate(true), WithLogger(log))
	if err != nil || oc != Updated {
		t.Fatalf("Ensure = %v, %v; want Updated", oc, err)
	}
	got := streamConfig(t, ctx, js, "LLM")
	if !slices.Equal(got.Subjects, []string{"llm.requests.>", "llm.responses.>"}) {
		t.Fatalf("subjects %v", got.Subjects)
	}
	if got.MaxAge != time.Hour {
		t.Fatalf("update changed MaxAge to %v", got.MaxAge)
	}
	logs := buf.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "old_subjects") || !strings.Contains(logs, "llm.responses.>") {
		t.Fatalf("update not logged at WARN with subjects:\n%s", logs)
	}
}

func TestEnsureOverlapNamesOwner(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "BUS", Subjects: []string{"llm.>"}})
	_, _, err := Ensure(ctx, js, DefaultSet().Requests)
	if !errors.Is(err, ErrSubjectOverlap) {
		t.Fatalf("Ensure error = %v; want ErrSubjectOverlap", err)
	}
	if !strings.Contains(err.Error(), `captured by stream ["BUS"]`) || !strings.Contains(err.Error(), `configure the stream name "BUS"`) {
		t.Fatalf("error does not name BUS and suggest it: %v", err)
	}
	if _, err := js.Stream(ctx, "LLM_REQUESTS"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("LLM_REQUESTS exists after failed Ensure: %v", err)
	}
	// Following the advice works.
	cfg := DefaultSet().Requests
	cfg.Name = "BUS"
	if _, oc, err := Ensure(ctx, js, cfg); err != nil || oc != Attached {
		t.Fatalf("Ensure BUS = %v, %v; want Attached", oc, err)
	}
}

func TestEnsureUpdateOverlapNamesOwner(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "BUS", Subjects: []string{"llm.responses.>"}})
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "LLM", Subjects: []string{"llm.requests.>"}})
	cfg := Config{Name: "LLM", Subjects: []string{"llm.requests.>", "llm.responses.>"}}
	_, _, err := Ensure(ctx, js, cfg, WithUpdate(true))
	if !errors.Is(err, ErrSubjectOverlap) || !strings.Contains(err.Error(), `"BUS"`) {
		t.Fatalf("Ensure error = %v; want ErrSubjectOverlap naming BUS", err)
	}
	if got := streamConfig(t, ctx, js, "LLM").Subjects; !slices.Equal(got, []string{"llm.requests.>"}) {
		t.Fatalf("subjects changed to %v", got)
	}
}

func TestEnsureWildcardSupersetAttaches(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "LLM_REQUESTS", Subjects: []string{"llm.>"}})
	_, oc, err := Ensure(ctx, js, DefaultSet().Requests)
	if err != nil || oc != Attached {
		t.Fatalf("Ensure = %v, %v; want Attached", oc, err)
	}
	if got := streamConfig(t, ctx, js, "LLM_REQUESTS").Subjects; !slices.Equal(got, []string{"llm.>"}) {
		t.Fatalf("subjects changed to %v", got)
	}
}

func TestEnsureSetDefaults(t *testing.T) {
	ctx, js := setup(t)
	set := DefaultSet()
	out, err := EnsureSet(ctx, js, set)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"LLM_REQUESTS", "LLM_RESPONSES", "KV_EVENTS", "KV_LOAD", "HINTSTREAM_DLQ"}
	if len(out) != len(want) {
		t.Fatalf("outcomes %v", out)
	}
	for _, n := range want {
		if out[n] != Created {
			t.Errorf("%s: %v, want created", n, out[n])
		}
	}
	if got := streamConfig(t, ctx, js, "HINTSTREAM_DLQ").MaxAge; got != 7*24*time.Hour {
		t.Errorf("DLQ MaxAge %v", got)
	}
	if got := streamConfig(t, ctx, js, "LLM_REQUESTS").MaxAge; got != DefaultRequestsMaxAge {
		t.Errorf("requests MaxAge %v, want %v (bounded by default, issue 15)", got, DefaultRequestsMaxAge)
	}

	// The duplicate window makes a retried publish a no-op.
	for range 2 {
		msg := nats.NewMsg(RequestSubject("Qwen/Qwen3-8B"))
		msg.Header.Set(nats.MsgIdHdr, "req-1")
		msg.Data = []byte(`{"request_id":"req-1"}`)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(ctx, "LLM_REQUESTS")
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Fatalf("%d messages after duplicate publish, want 1", n)
	}

	set.DeadLetter.Name = "" // skipped
	out, err = EnsureSet(ctx, js, set)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out["LLM_REQUESTS"] != Attached || out["KV_EVENTS"] != Attached {
		t.Fatalf("second run outcomes %v", out)
	}
}

func TestEnsureSetReportsEveryFailure(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "BUS", Subjects: []string{"llm.>"}})
	out, err := EnsureSet(ctx, js, DefaultSet())
	if !errors.Is(err, ErrSubjectOverlap) {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), `"LLM_REQUESTS"`) || !strings.Contains(err.Error(), `"LLM_RESPONSES"`) {
		t.Fatalf("error does not name both failing streams: %v", err)
	}
	if out["KV_EVENTS"] != Created || out["KV_LOAD"] != Created || out["HINTSTREAM_DLQ"] != Created {
		t.Fatalf("outcomes %v", out)
	}
}

func TestEnsureRejectsBadConfig(t *testing.T) {
	ctx, js := setup(t)
	for _, cfg := range []Config{
		{Subjects: []string{"a.>"}},
		{Name: "A"},
		{Name: "A", Subjects: []string{"a..b"}},
		{Name: "A", Subjects: []string{"a b"}},
		{Name: "A", Subjects: []string{"a"}, MaxAge: -time.Second},
	} {
		if _, _, err := Ensure(ctx, js, cfg); err == nil {
			t.Errorf("Ensure(%+v) accepted", cfg)
		}
	}
	names := js.StreamNames(ctx)
	for n := range names.Name() {
		t.Errorf("stream %q created from a bad config", n)
	}
}
