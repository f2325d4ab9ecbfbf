package eventplane

import (
	"errors"
	"slices"
	"testing"

	"github.com/hintstream/hintstream/streams"
)

func TestScopeSubjects(t *testing.T) {
	s := Scope{Namespace: "dynamo", Component: "backend"}
	if got := s.Subject(TopicKVEvents); got != "namespace.dynamo.component.backend.kv-events" {
		t.Errorf("kv subject %q", got)
	}
	if got := s.EndpointSubject("generate", TopicKVMetrics); got != "namespace.dynamo.component.backend.endpoint.generate.kv_metrics" {
		t.Errorf("load subject %q", got)
	}
	// encode_event_segment: '.', '*', '/' and non-ASCII become %XX.
	odd := Scope{Namespace: "team.a", Component: "vllm/*ü"}
	if got, want := odd.Subject(TopicKVEvents), "namespace.team%2Ea.component.vllm%2F%2A%C3%BC.kv-events"; got != want {
		t.Errorf("encoded subject %q, want %q", got, want)
	}
	if got := s.KVEventSubjects(); !slices.Equal(got, []string{"namespace.dynamo.component.backend.kv-events",
		"namespace.dynamo.component.backend.endpoint.*.kv-events"}) {
		t.Errorf("kv subjects %q", got)
	}
	for _, subj := range s.LoadSubjects() {
		if !IsLoadSubject(subj) || IsKVEventsSubject(subj) {
			t.Errorf("%q misclassified", subj)
		}
	}
	for _, subj := range []string{"kv.events.7", "kv.load.7", "namespace-dynamo-component-backend-kv-events.queue"} {
		if IsKVEventsSubject(subj) || IsLoadSubject(subj) {
			t.Errorf("%q taken for an event-plane subject", subj)
		}
	}
	if err := (Scope{Namespace: "x"}).Validate(); !errors.Is(err, ErrBadScope) {
		t.Errorf("Validate without component: %v", err)
	}
}

func TestScopeApply(t *testing.T) {
	s := Scope{Namespace: "dynamo", Component: "backend"}
	def := streams.DefaultSet()
	set := s.Apply(s.Apply(def))
	if !slices.Equal(set.KVEvents.Subjects, append([]string{"kv.events.>"}, s.KVEventSubjects()...)) {
		t.Errorf("kv subjects %q", set.KVEvents.Subjects)
	}
	if !slices.Equal(set.Load.Subjects, append([]string{"kv.load.>"}, s.LoadSubjects()...)) {
		t.Errorf("load subjects %q", set.Load.Subjects)
	}
	if set.KVEvents.Name != def.KVEvents.Name || len(def.KVEvents.Subjects) != 1 {
		t.Errorf("Apply renamed the stream or changed its argument: %+v / %+v", set.KVEvents, def.KVEvents)
	}
}
