package service

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/ingest/eventplane"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/streams"
)

// RegisterStreamFlags registers the stream name and subject flags that
// `run` and `streams` share, bound to c.Streams and c.DeadLetterPrefix:
// names, subjects, the dead-letter stream and prefix, replicas,
// placement and retention of the streams hintstream creates (an existing
// stream is attached as it is), and Dynamo's event-plane scope
// (eventplane.Scope's flags). ApplyFlags builds c.Streams from them.
func (c *Config) RegisterStreamFlags(fs *flag.FlagSet) {
	if c.flags == nil {
		c.flags = &configFlags{}
	}
	f := &streamFlags{}
	c.flags.streams = f
	def := streams.DefaultSet()
	c.Streams = def
	s := &c.Streams
	fs.StringVar(&s.Requests.Name, "requests-stream", def.Requests.Name, "stream of request events")
	fs.StringVar(&f.reqSubj, "requests-subjects", strings.Join(def.Requests.Subjects, ","), "subjects of request events")
	fs.StringVar(&s.Responses.Name, "responses-stream", def.Responses.Name, "stream of response events")
	fs.StringVar(&f.respSubj, "responses-subjects", strings.Join(def.Responses.Subjects, ","), "subjects of response events")
	fs.StringVar(&s.KVEvents.Name, "kv-events-stream", def.KVEvents.Name, "stream of KV events")
	fs.StringVar(&f.kvSubj, "kv-events-subjects", strings.Join(def.KVEvents.Subjects, ","), "subjects of KV events")
	fs.StringVar(&s.Load.Name, "load-stream", def.Load.Name, "stream of load metrics")
	fs.StringVar(&f.loadSubj, "load-subjects", strings.Join(def.Load.Subjects, ","), "subjects of load metrics")
	fs.StringVar(&s.DeadLetter.Name, "dead-letter-stream", def.DeadLetter.Name, "stream keeping dead-lettered copies")
	fs.StringVar(&c.DeadLetterPrefix, "dead-letter-prefix", consumers.DefaultDeadLetterPrefix, "dead-letter subject prefix; copies go to <prefix>.<kind>")

	fs.IntVar(&f.replicas, "stream-replicas", 1, "replicas of every stream, KV bucket and object store hintstream creates (1..5; a JetStream cluster needs as many servers)")
	fs.StringVar(&f.tags, "stream-placement-tags", "", "comma-separated server tags the replicas must be placed on (server_tags); empty: anywhere")
	fs.DurationVar(&s.Requests.MaxAge, "requests-max-age", def.Requests.MaxAge, "max_age of a created requests stream; not below --request-index-ttl (0: unlimited)")
	fs.DurationVar(&s.Responses.MaxAge, "responses-max-age", def.Responses.MaxAge, "max_age of a created responses stream; not below --request-index-ttl (0: unlimited)")
	cmdline.BytesVar(fs, &s.Requests.MaxBytes, "requests-max-bytes", 0, "max_bytes of a created requests stream; oldest requests go first (0: unlimited)")
	cmdline.BytesVar(fs, &s.Responses.MaxBytes, "responses-max-bytes", 0, "max_bytes of a created responses stream (0: unlimited)")
	f.scope.RegisterFlags(fs)
}

// applyStreamFlags builds c.Streams from the parsed stream flags and
// checks their retention against c.RequestIndexTTL (0 for `streams`,
// which has no request index).
func (c *Config) applyStreamFlags(f *streamFlags) error {
	set := c.Streams
	set.Requests.Subjects = cmdline.List(f.reqSubj)
	set.Responses.Subjects = cmdline.List(f.respSubj)
	set.KVEvents.Subjects = cmdline.List(f.kvSubj)
	set.Load.Subjects = cmdline.List(f.loadSubj)
	set.DeadLetter.Subjects = []string{c.DeadLetterPrefix + ".>"}
	set = set.Apply(streams.Placement{Replicas: f.replicas, Tags: cmdline.List(f.tags)})
	if len(c.DynamoZMQ) > 0 && !f.scope.Given() {
		f.scope.Namespace = eventplane.DefaultNamespace // --dynamo-zmq alone: Dynamo's default scope
	}
	c.Streams = f.scope.ApplyGiven(set)
	c.DynamoScope = f.scope
	return checkStreamRetention(c.Streams, c.RequestIndexTTL)
}

// checkStreamRetention: a requests or responses stream must keep a
// request as long as the request index may point at it.
func checkStreamRetention(set streams.Set, requestIndexTTL time.Duration) error {
	for _, c := range []struct {
		flag string
		age  time.Duration
		max  int64
	}{{"--requests-max-age", set.Requests.MaxAge, set.Requests.MaxBytes}, {"--responses-max-age", set.Responses.MaxAge, set.Responses.MaxBytes}} {
		if c.age < 0 || c.max < 0 {
			return fmt.Errorf("%s and its --*-max-bytes must not be negative", c.flag)
		}
		if c.age > 0 && c.age < requestIndexTTL {
			return fmt.Errorf("%s %v is below --request-index-ttl %v: a response's request would be gone before the index entry pointing at it", c.flag, c.age, requestIndexTTL)
		}
	}
	return (streams.Placement{Replicas: set.Requests.Replicas, Tags: set.Requests.PlacementTags}).Validate()
}
