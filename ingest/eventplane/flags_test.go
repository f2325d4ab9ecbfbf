package eventplane

import (
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/streams"
)

// Neither flag leaves the set alone; one flag takes Dynamo's default for
// the other; an empty value is refused.
func TestScopeFlags(t *testing.T) {
	parse := func(args ...string) (Scope, error) {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var s Scope
		s.RegisterFlags(fs)
		return s, fs.Parse(args)
	}
	def := streams.DefaultSet()
	s, err := parse()
	if err != nil || s.Given() || !slices.Equal(s.ApplyGiven(def).KVEvents.Subjects, def.KVEvents.Subjects) {
		t.Fatalf("no flags: %+v %v", s, err)
	}
	s, err = parse("--dynamo-namespace", "prod")
	if err != nil || !s.Given() {
		t.Fatalf("namespace: %+v %v", s, err)
	}
	want := Scope{Namespace: "prod", Component: DefaultComponent}.KVEventSubjects()[0]
	if got := s.ApplyGiven(def).KVEvents.Subjects; !slices.Contains(got, want) {
		t.Fatalf("subjects %q lack %q", got, want)
	}
	if _, err := parse("--dynamo-component", ""); err == nil {
		t.Fatal("empty component accepted")
	}
	if slices.ContainsFunc(s.ApplyGiven(def).Requests.Subjects, IsActiveSequencesSubject) {
		t.Fatal("active sequences captured without --dynamo-active-sequences")
	}
	// --dynamo-active-sequences alone: Dynamo's default scope, captured
	// in the request stream beside hintstream's own request subjects.
	s, err = parse("--dynamo-active-sequences")
	if err != nil || !s.Given() {
		t.Fatalf("active sequences: %+v %v", s, err)
	}
	got := s.ApplyGiven(def).Requests.Subjects
	wantSeq := Scope{Namespace: DefaultNamespace, Component: DefaultComponent}.ActiveSequenceSubjects()
	if !slices.Equal(got, append(slices.Clone(def.Requests.Subjects), wantSeq...)) {
		t.Fatalf("request subjects %q", got)
	}
	for _, subj := range []string{"namespace.dynamo.component.backend.active_sequences_events",
		"namespace.dynamo.component.backend.endpoint.generate.active_sequences_events"} {
		if !IsActiveSequencesSubject(subj) || !slices.ContainsFunc(got, func(f string) bool { return streams.SubjectMatches(f, subj) }) {
			t.Errorf("%s not captured", subj)
		}
	}
}
