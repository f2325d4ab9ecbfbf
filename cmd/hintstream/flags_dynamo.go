package main

import (
	"errors"
	"flag"

	"github.com/hintstream/hintstream/eventplane"
	"github.com/hintstream/hintstream/streams"
)

// dynamoFlags registers --dynamo-namespace and --dynamo-component (names
// the Helm chart relies on) for run and streams, and returns streamSet
// wrapped so that, when either flag is given, the KV-events and load
// streams also capture that component's event-plane subjects:
//
//	namespace.NS.component.COMP.kv-events, namespace.NS.component.COMP.endpoint.*.kv-events
//	namespace.NS.component.COMP.kv_metrics, namespace.NS.component.COMP.endpoint.*.kv_metrics
//
// A flag left out takes Dynamo's default (namespace "dynamo", component
// "backend"); an empty value is an error. Neither flag: the set is
// unchanged.
func dynamoFlags(fs *flag.FlagSet, streamSet func() (streams.Set, string)) func() (streams.Set, string) {
	var scope eventplane.Scope
	var on bool
	nonEmpty := func(dst *string) func(string) error {
		return func(v string) error {
			if v == "" {
				return errors.New("must not be empty")
			}
			*dst, on = v, true
			return nil
		}
	}
	fs.Func("dynamo-namespace", "read Dynamo's event plane (NATS transport, DYN_EVENT_PLANE=nats) of this namespace: "+
		"the KV-events and load streams capture its kv-events and kv_metrics subjects (default component \""+
		eventplane.DefaultComponent+"\")", nonEmpty(&scope.Namespace))
	fs.Func("dynamo-component", "with --dynamo-namespace: the workers' Dynamo component (default namespace \""+
		eventplane.DefaultNamespace+"\")", nonEmpty(&scope.Component))
	return func() (streams.Set, string) {
		set, prefix := streamSet()
		if !on {
			return set, prefix
		}
		s := scope
		if s.Namespace == "" {
			s.Namespace = eventplane.DefaultNamespace
		}
		if s.Component == "" {
			s.Component = eventplane.DefaultComponent
		}
		return s.Apply(set), prefix
	}
}
