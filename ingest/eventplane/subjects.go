package eventplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hintstream/hintstream/streams"
)

// Topics of Dynamo's event plane that hintstream reads (KV_EVENT_SUBJECT
// and KV_METRICS_SUBJECT in lib/llm/src/kv_router.rs).
const (
	TopicKVEvents  = "kv-events"
	TopicKVMetrics = "kv_metrics"
)

// Dynamo's own defaults for a worker's namespace (DYN_NAMESPACE) and
// component, used by a Scope that names only one of the two.
const (
	DefaultNamespace = "dynamo"
	DefaultComponent = "backend"
)

// subjectRoot starts every event-plane subject; hintstream's own default
// subjects (kv.events.>, kv.load.>) never do, so the subject alone says
// which decoder a message needs.
const subjectRoot = "namespace."

// ErrBadScope is returned by Scope.Validate.
var ErrBadScope = errors.New("eventplane: invalid Dynamo scope")

// Scope is a Dynamo namespace and component whose workers publish on the
// event plane.
type Scope struct {
	Namespace, Component string
	// ActiveSequences also captures the component's
	// active_sequences_events subjects (ApplySequences), where KV routers
	// with DYN_ROUTER_REPLICA_SYNC=true publish ActiveSequenceEvents.
	ActiveSequences bool
}

// Validate reports an empty namespace or component.
func (s Scope) Validate() error {
	if s.Namespace == "" || s.Component == "" {
		return fmt.Errorf("%w: namespace %q and component %q must both be set", ErrBadScope, s.Namespace, s.Component)
	}
	return nil
}

// prefix is EventScope::Component's subject_prefix.
func (s Scope) prefix() string {
	return subjectRoot + encodeSegment(s.Namespace) + ".component." + encodeSegment(s.Component)
}

// Subject is where a component-scoped publisher of topic publishes.
func (s Scope) Subject(topic string) string { return s.prefix() + "." + encodeSegment(topic) }

// EndpointSubject is where an endpoint-scoped publisher of topic publishes.
func (s Scope) EndpointSubject(endpoint, topic string) string {
	return s.prefix() + ".endpoint." + encodeSegment(endpoint) + "." + encodeSegment(topic)
}

// KVEventSubjects captures the scope's KV events, component- and
// endpoint-scoped.
func (s Scope) KVEventSubjects() []string {
	return []string{s.Subject(TopicKVEvents), s.prefix() + ".endpoint.*." + TopicKVEvents}
}

// LoadSubjects captures the scope's load reports, component- and
// endpoint-scoped.
func (s Scope) LoadSubjects() []string {
	return []string{s.Subject(TopicKVMetrics), s.prefix() + ".endpoint.*." + TopicKVMetrics}
}

// ActiveSequenceSubjects captures the scope's ActiveSequenceEvents:
// today's routers publish them endpoint-scoped (on the workers' endpoint,
// lib/llm/src/kv_router/sequence.rs @ 0266c3eba4f56312ce2cae8cc69db3cb2cbc4402),
// earlier ones component-scoped.
func (s Scope) ActiveSequenceSubjects() []string {
	return []string{s.Subject(TopicActiveSequences), s.prefix() + ".endpoint.*." + TopicActiveSequences}
}

// ApplySequences adds the scope's ActiveSequenceEvent subjects to the
// request stream of set: an AddRequest is a request's start, a trigger
// shared by the members of a consumer group as request events are.
func (s Scope) ApplySequences(set streams.Set) streams.Set {
	set.Requests.Subjects = appendNew(slices.Clone(set.Requests.Subjects), s.ActiveSequenceSubjects()...)
	return set
}

// Apply adds the scope's subjects to the KV-events and load streams of set
// (subjects already there are not repeated). The streams keep their names
// and their other subjects: hintstream's own kv.events.> and kv.load.> are
// read as before, beside the event plane.
func (s Scope) Apply(set streams.Set) streams.Set {
	set.KVEvents.Subjects = appendNew(slices.Clone(set.KVEvents.Subjects), s.KVEventSubjects()...)
	set.Load.Subjects = appendNew(slices.Clone(set.Load.Subjects), s.LoadSubjects()...)
	return set
}

func appendNew(dst []string, add ...string) []string {
	for _, a := range add {
		if !slices.Contains(dst, a) {
			dst = append(dst, a)
		}
	}
	return dst
}

// IsKVEventsSubject reports an event-plane subject of topic kv-events, in
// any namespace and component.
func IsKVEventsSubject(subject string) bool { return isTopic(subject, TopicKVEvents) }

// IsLoadSubject reports an event-plane subject of topic kv_metrics.
func IsLoadSubject(subject string) bool { return isTopic(subject, TopicKVMetrics) }

// IsActiveSequencesSubject reports an event-plane subject of topic
// active_sequences_events.
func IsActiveSequencesSubject(subject string) bool { return isTopic(subject, TopicActiveSequences) }

func isTopic(subject, topic string) bool {
	return strings.HasPrefix(subject, subjectRoot) && strings.HasSuffix(subject, "."+topic)
}

// encodeSegment is Dynamo's encode_event_segment: bytes other than ASCII
// letters, digits, '-' and '_' become %XX (upper-case hex), so that a '.',
// '*' or '>' in a name cannot split a token or act as a wildcard.
func encodeSegment(v string) string {
	clean := true
	for i := 0; i < len(v); i++ {
		if !plainByte(v[i]) {
			clean = false
			break
		}
	}
	if clean {
		return v
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if c := v[i]; plainByte(c) {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}

func plainByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}
