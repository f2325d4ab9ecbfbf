package eventplane

import (
	"errors"
	"flag"

	"github.com/hintstream/hintstream/streams"
)

// RegisterFlags registers --dynamo-namespace and --dynamo-component
// (names the Helm chart relies on) on fs, bound to s. When either is
// given (Given), ApplyGiven makes the KV-events and load streams also
// capture that component's event-plane subjects:
//
//	namespace.NS.component.COMP.kv-events, namespace.NS.component.COMP.endpoint.*.kv-events
//	namespace.NS.component.COMP.kv_metrics, namespace.NS.component.COMP.endpoint.*.kv_metrics
//
// With --dynamo-active-sequences the request stream also captures
//
//	namespace.NS.component.COMP.active_sequences_events, namespace.NS.component.COMP.endpoint.*.active_sequences_events
//
// A flag left out takes Dynamo's default (namespace "dynamo", component
// "backend"); an empty value is an error.
func (s *Scope) RegisterFlags(fs *flag.FlagSet) {
	nonEmpty := func(dst *string) func(string) error {
		return func(v string) error {
			if v == "" {
				return errors.New("must not be empty")
			}
			*dst = v
			return nil
		}
	}
	fs.Func("dynamo-namespace", "read Dynamo's event plane of this namespace (NATS transport, DYN_EVENT_PLANE=nats, "+
		"or ZMQ through hintstream bridge --dynamo-zmq): the KV-events and load streams capture its kv-events and "+
		"kv_metrics subjects (default component \""+DefaultComponent+"\")", nonEmpty(&s.Namespace))
	fs.Func("dynamo-component", "with --dynamo-namespace: the workers' Dynamo component (default namespace \""+
		DefaultNamespace+"\")", nonEmpty(&s.Component))
	fs.BoolVar(&s.ActiveSequences, "dynamo-active-sequences", false, "also read the KV routers' routing-time request starts "+
		"(ActiveSequenceEvent, published with DYN_ROUTER_REPLICA_SYNC=true): the request stream captures the component's "+
		"active_sequences_events subjects")
}

// Given reports whether a namespace or a component was set, or
// --dynamo-active-sequences.
func (s Scope) Given() bool { return s.Namespace != "" || s.Component != "" || s.ActiveSequences }

// ApplyGiven is Apply with Dynamo's defaults for the part left out, when
// the scope was given; otherwise set unchanged.
func (s Scope) ApplyGiven(set streams.Set) streams.Set {
	if !s.Given() {
		return set
	}
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	if s.Component == "" {
		s.Component = DefaultComponent
	}
	if s.ActiveSequences {
		set = s.ApplySequences(set)
	}
	return s.Apply(set)
}
