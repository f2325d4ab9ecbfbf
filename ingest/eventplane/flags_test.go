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
}
