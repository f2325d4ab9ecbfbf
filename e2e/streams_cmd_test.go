package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/nats-io/nats.go/jetstream"
)

// streamsRun runs `hintstream streams args...` against url to completion
// and returns its stdout, stderr and exit status.
func streamsRun(t *testing.T, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(append([]string{"streams"}, args...), "--nats-url", url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("hintstream streams %q: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// lineFor returns the output line that mentions stream name.
func lineFor(t *testing.T, out, name string) []string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[1] == name {
			return f
		}
	}
	t.Fatalf("no line for %s in:\n%s", name, out)
	return nil
}

var allStreams = []string{"LLM_REQUESTS", "LLM_RESPONSES", "KV_EVENTS", "KV_LOAD", "HINTSTREAM_DLQ"}

func TestStreamsCreateCheckDelete(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	url := s.ClientURL()

	// Before anything exists check fails and names every stream.
	out, errOut, code := streamsRun(t, url, "check")
	if code != 1 || !strings.Contains(errOut, "KV_EVENTS absent") {
		t.Fatalf("check on empty server: code %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = streamsRun(t, url, "create")
	if code != 0 {
		t.Fatalf("create: code %d\n%s\n%s", code, out, errOut)
	}
	for _, n := range allStreams {
		if f := lineFor(t, out, n); f[2] != "created" {
			t.Fatalf("create line %q, want created", f)
		}
	}
	if f := lineFor(t, out, "KV_EVENTS"); f[3] != "kv.events.>" {
		t.Fatalf("create line %q lacks the subjects", f)
	}

	// A second create attaches.
	out, _, code = streamsRun(t, url, "create")
	if code != 0 || lineFor(t, out, "LLM_REQUESTS")[2] != "attached" {
		t.Fatalf("second create: code %d\n%s", code, out)
	}

	out, errOut, code = streamsRun(t, url) // check is the default action
	if code != 0 {
		t.Fatalf("check after create: code %d\n%s\n%s", code, out, errOut)
	}
	for _, n := range allStreams {
		if f := lineFor(t, out, n); f[2] != "ok" {
			t.Fatalf("check line %q, want ok", f)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(10*time.Second))
	defer cancel()
	if err := js.DeleteStream(ctx, "KV_LOAD"); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = streamsRun(t, url, "check")
	if code != 1 || lineFor(t, out, "KV_LOAD")[2] != "absent" || !strings.Contains(errOut, "KV_LOAD absent") ||
		strings.Contains(errOut, "KV_EVENTS") {
		t.Fatalf("check after deleting KV_LOAD: code %d\n%s\n%s", code, out, errOut)
	}

	// --json parses and agrees.
	out, _, code = streamsRun(t, url, "check", "--json")
	var doc struct {
		OK      bool `json:"ok"`
		Streams []struct {
			Role    string `json:"role"`
			Name    string `json:"name"`
			Present bool   `json:"present"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("check --json: %v\n%s", err, out)
	}
	if code != 1 || doc.OK || len(doc.Streams) != 5 || doc.Streams[3].Name != "KV_LOAD" ||
		doc.Streams[3].Role != "load" || doc.Streams[3].Present || !doc.Streams[0].Present {
		t.Fatalf("check --json: code %d, %+v", code, doc)
	}
}

func TestStreamsSubjectMismatchNeedsUpdate(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	url := s.ClientURL()
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(20*time.Second))
	defer cancel()
	// An operator's KV_EVENTS that captures only Dynamo-style subjects.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "KV_EVENTS", Subjects: []string{"dyn.kv.*"}}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--kv-events-subjects", "dyn.kv.*,kv.events.>"}

	out, errOut, code := streamsRun(t, url, append([]string{"check"}, flags...)...)
	if code != 1 || lineFor(t, out, "KV_EVENTS")[2] != "mismatch" || !strings.Contains(out, "kv.events.>") ||
		!strings.Contains(errOut, "KV_EVENTS mismatch") {
		t.Fatalf("check: code %d\n%s\n%s", code, out, errOut)
	}

	out, errOut, code = streamsRun(t, url, append([]string{"create"}, flags...)...)
	if code != 1 || lineFor(t, out, "KV_EVENTS")[2] != "failed" || !strings.Contains(errOut, "does not capture") {
		t.Fatalf("create without --update-streams: code %d\n%s\n%s", code, out, errOut)
	}
	st, err := js.Stream(ctx, "KV_EVENTS")
	if err != nil || !slices.Equal(st.CachedInfo().Config.Subjects, []string{"dyn.kv.*"}) {
		t.Fatalf("stream changed without --update-streams: %v", err)
	}

	out, errOut, code = streamsRun(t, url, append([]string{"create", "--update-streams"}, flags...)...)
	if code != 0 || lineFor(t, out, "KV_EVENTS")[2] != "updated" {
		t.Fatalf("create --update-streams: code %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = streamsRun(t, url, append([]string{"check"}, flags...)...)
	if code != 0 {
		t.Fatalf("check after update: code %d\n%s\n%s", code, out, errOut)
	}
	// The stream keeps its own settings: reported, exit 0, unless --strict.
	if f := lineFor(t, out, "KV_EVENTS"); f[2] != "differs" {
		t.Fatalf("check line %q, want differs", f)
	}
	if _, errOut, code = streamsRun(t, url, append([]string{"check", "--strict"}, flags...)...); code != 1 ||
		!strings.Contains(errOut, "KV_EVENTS differs") {
		t.Fatalf("check --strict: code %d\n%s", code, errOut)
	}
}

func TestStreamsDescribeShowsConsumerPending(t *testing.T) {
	s := natstest.Start(t)
	_, js := natstest.Connect(t, s)
	url := s.ClientURL()
	if _, errOut, code := streamsRun(t, url, "create"); code != 0 {
		t.Fatalf("create: %s", errOut)
	}
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(20*time.Second))
	defer cancel()
	if _, err := js.CreateOrUpdateConsumer(ctx, "LLM_REQUESTS", jetstream.ConsumerConfig{
		Durable: "hintstream-requests", AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := js.Publish(ctx, "llm.requests.m", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}

	out, errOut, code := streamsRun(t, url, "describe")
	if code != 0 {
		t.Fatalf("describe: code %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "4 messages") {
		t.Fatalf("describe lacks the message count:\n%s", out)
	}
	var row []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 6 && f[0] == "hintstream-requests" {
			row = f
		}
	}
	// consumer, durable, ack, pending, ack pending, redelivered
	if len(row) < 6 || !slices.Equal(row[:6], []string{"hintstream-requests", "true", "explicit", "4", "0", "0"}) {
		t.Fatalf("consumer row %q in:\n%s", row, out)
	}

	out, _, code = streamsRun(t, url, "--json", "describe") // the action may follow flags
	var doc struct {
		Streams []struct {
			Name      string `json:"name"`
			Present   bool   `json:"present"`
			Messages  uint64 `json:"messages"`
			LastSeq   uint64 `json:"last_seq"`
			Consumers []struct {
				Name    string `json:"name"`
				Pending uint64 `json:"pending"`
			} `json:"consumers"`
		} `json:"streams"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("describe --json: code %d, %v\n%s", code, err, out)
	}
	if len(doc.Streams) != 5 || doc.Streams[0].Name != "LLM_REQUESTS" || doc.Streams[0].Messages != 4 ||
		doc.Streams[0].LastSeq != 4 || len(doc.Streams[0].Consumers) != 1 || doc.Streams[0].Consumers[0].Pending != 4 {
		t.Fatalf("describe --json: %+v", doc)
	}
}

func TestStreamsHelpDocumentsDynamo(t *testing.T) {
	out, errOut, code := streamsRun(t, "nats://127.0.0.1:1", "--help")
	if code != 0 || !strings.Contains(out+errOut, "--kv-events-stream namespace-dynamo-component-backend-kv-events") {
		t.Fatalf("--help: code %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := streamsRun(t, "nats://127.0.0.1:1", "frobnicate"); code != 2 || !strings.Contains(errOut, "unknown action") {
		t.Fatalf("unknown action: code %d, %s", code, errOut)
	}
}
