package streams

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestCheckAbsentPresentMismatch(t *testing.T) {
	ctx, js := setup(t)
	cfg := DefaultSet().KVEvents

	r, err := check(ctx, js, cfg)
	if err != nil || r.Present || r.OK() || r.Status() != "absent" || len(r.CapturedBy) != 0 {
		t.Fatalf("absent: %+v, %v", r, err)
	}
	if _, _, err := Ensure(ctx, js, cfg); err != nil {
		t.Fatal(err)
	}
	r, err = check(ctx, js, cfg)
	if err != nil || !r.OK() || r.Status() != "ok" || len(r.Differences) != 0 {
		t.Fatalf("created: %+v, %v", r, err)
	}

	// Ask for one more subject than the stream captures, and a different
	// max age: the subject is a mismatch, the age a difference.
	want := cfg
	want.Subjects = []string{"kv.events.>", "kv.extra.>"}
	want.MaxAge = time.Hour
	r, err = check(ctx, js, want)
	if err != nil || r.OK() || r.Status() != "mismatch" ||
		!slices.Equal(r.Missing, []string{"kv.extra.>"}) || !slices.Equal(r.HaveSubjects, []string{"kv.events.>"}) {
		t.Fatalf("mismatch: %+v, %v", r, err)
	}
	if len(r.Differences) != 1 || !strings.HasPrefix(r.Differences[0], "max_age:") {
		t.Fatalf("differences %q, want one max_age", r.Differences)
	}
	// check changed nothing.
	if got := streamConfig(t, ctx, js, cfg.Name); !slices.Equal(got.Subjects, cfg.Subjects) || got.MaxAge != 0 {
		t.Fatalf("Check modified the stream: %+v", got)
	}

	want.Subjects = cfg.Subjects
	r, err = check(ctx, js, want)
	if err != nil || !r.OK() || r.Status() != "differs" {
		t.Fatalf("differs: %+v, %v", r, err)
	}
}

func TestCheckNamesStreamThatCapturesSubjects(t *testing.T) {
	ctx, js := setup(t)
	mustCreate(t, ctx, js, jetstream.StreamConfig{Name: "DYNAMO_KV", Subjects: []string{"kv.events.>"}})
	r, err := check(ctx, js, DefaultSet().KVEvents)
	if err != nil || r.Present || !slices.Equal(r.CapturedBy, []string{"DYNAMO_KV"}) {
		t.Fatalf("report %+v, %v; want absent, captured by DYNAMO_KV", r, err)
	}
}

func TestCheckRejectsInvalidConfig(t *testing.T) {
	ctx, js := setup(t)
	if _, err := check(ctx, js, Config{Name: "X", Subjects: []string{"a..b"}}); err == nil {
		t.Fatal("Check accepted an empty subject token")
	}
}

func TestCheckSetRolesAndOrder(t *testing.T) {
	ctx, js := setup(t)
	s := DefaultSet()
	s.DeadLetter.Name = "" // left out
	if _, err := EnsureSet(ctx, js, s); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, s.Load.Name); err != nil {
		t.Fatal(err)
	}
	rs, err := CheckSet(ctx, js, s)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rs {
		got = append(got, r.Role+"="+r.Status())
	}
	want := []string{"requests=ok", "responses=ok", "kv-events=ok", "load=absent"}
	if !slices.Equal(got, want) {
		t.Fatalf("CheckSet = %q, want %q", got, want)
	}
}

func TestDescribeStateAndConsumers(t *testing.T) {
	ctx, js := setup(t)
	if _, _, err := Ensure(ctx, js, DefaultSet().Requests); err != nil {
		t.Fatal(err)
	}
	d, err := Describe(ctx, js, "LLM_REQUESTS")
	if err != nil || d.Messages != 0 || !d.FirstTime.IsZero() || len(d.Consumers) != 0 || d.Consumers == nil {
		t.Fatalf("empty stream: %+v, %v", d, err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "LLM_REQUESTS", jetstream.ConsumerConfig{
		Durable: "g-requests", AckPolicy: jetstream.AckExplicitPolicy, FilterSubject: "llm.requests.>",
	}); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	for i := range 3 {
		if _, err := js.Publish(ctx, RequestSubject("m"), []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	// Deliver one without acking it: pending 2, ack pending 1.
	c, err := js.Consumer(ctx, "LLM_REQUESTS", "g-requests")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(jetstream.FetchMaxWait(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	d, err = Describe(ctx, js, "LLM_REQUESTS")
	if err != nil {
		t.Fatal(err)
	}
	if d.Messages != 3 || d.Bytes == 0 || d.FirstSeq != 1 || d.LastSeq != 3 || d.ConsumerCount != 1 ||
		d.FirstTime.Before(before) || d.LastTime.Before(d.FirstTime) ||
		d.Storage != "file" || d.Retention != "limits" || d.Duplicates != DefaultDuplicates {
		t.Fatalf("description %+v", d)
	}
	if len(d.Consumers) != 1 {
		t.Fatalf("consumers %+v", d.Consumers)
	}
	cs := d.Consumers[0]
	if cs.Name != "g-requests" || !cs.Durable || cs.AckPolicy != "explicit" || cs.Pending != 2 || cs.AckPending != 1 ||
		cs.DeliveredTo != 1 || !slices.Equal(cs.FilterSubjects, []string{"llm.requests.>"}) {
		t.Fatalf("consumer %+v", cs)
	}
}

func TestDescribeAbsent(t *testing.T) {
	ctx, js := setup(t)
	if _, err := Describe(ctx, js, "NOPE"); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("err %v, want ErrStreamNotFound", err)
	}
}

// TestDescribeCountsUnconsumed: a group serving only model a (its
// durable filters on llm.requests.a) leaves the messages of model b
// unread; Describe counts them per subject, and a subject a wildcard
// filter covers is not counted.
func TestDescribeCountsUnconsumed(t *testing.T) {
	ctx, js := setup(t)
	if _, _, err := Ensure(ctx, js, DefaultSet().Requests); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"llm.requests.a", "llm.requests.b", "llm.requests.b", "llm.requests.Qwen/Qwen2.5-7B"} {
		if _, err := js.Publish(ctx, subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	d, err := Describe(ctx, js, "LLM_REQUESTS")
	if err != nil || d.Unconsumed != nil {
		t.Fatalf("no durable yet: %v %v", d.Unconsumed, err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, "LLM_REQUESTS", jetstream.ConsumerConfig{
		Durable: "ga-requests", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubjects: []string{"llm.requests.a", "llm.requests.Qwen/Qwen2.*"},
	}); err != nil {
		t.Fatal(err)
	}
	d, err = Describe(ctx, js, "LLM_REQUESTS")
	if err != nil || len(d.Unconsumed) != 1 || d.Unconsumed["llm.requests.b"] != 2 {
		t.Fatalf("unconsumed %v, %v; want llm.requests.b: 2", d.Unconsumed, err)
	}
	for _, c := range []struct {
		f, s string
		ok   bool
	}{{">", "a", true}, {"a.>", "a", false}, {"a.>", "a.b.c", true}, {"a.*", "a.b", true}, {"a.*", "a.b.c", false}, {"a.b", "a.b", true}, {"a.b", "a.c", false}} {
		if SubjectMatches(c.f, c.s) != c.ok {
			t.Errorf("SubjectMatches(%q, %q) = %v", c.f, c.s, !c.ok)
		}
	}
}
