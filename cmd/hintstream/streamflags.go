package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/streams"
)

// streamSetFlags registers the stream name and subject flags shared by run
// and streams, and returns the set they describe and the dead-letter
// subject prefix.
func streamSetFlags(fs *flag.FlagSet) func() (streams.Set, string) {
	def := streams.DefaultSet()
	var (
		reqStream  = fs.String("requests-stream", def.Requests.Name, "stream of request events")
		reqSubj    = fs.String("requests-subjects", strings.Join(def.Requests.Subjects, ","), "subjects of request events")
		respStream = fs.String("responses-stream", def.Responses.Name, "stream of response events")
		respSubj   = fs.String("responses-subjects", strings.Join(def.Responses.Subjects, ","), "subjects of response events")
		kvStream   = fs.String("kv-events-stream", def.KVEvents.Name, "stream of KV events")
		kvSubj     = fs.String("kv-events-subjects", strings.Join(def.KVEvents.Subjects, ","), "subjects of KV events")
		loadStream = fs.String("load-stream", def.Load.Name, "stream of load metrics")
		loadSubj   = fs.String("load-subjects", strings.Join(def.Load.Subjects, ","), "subjects of load metrics")
		dlqStream  = fs.String("dead-letter-stream", def.DeadLetter.Name, "stream keeping dead-lettered copies")
		dlqPrefix  = fs.String("dead-letter-prefix", consumers.DefaultDeadLetterPrefix, "dead-letter subject prefix; copies go to <prefix>.<kind>")
	)
	cluster := streamClusterFlags(fs, def)
	return func() (streams.Set, string) {
		set := def
		set.Requests.Name, set.Requests.Subjects = *reqStream, split(*reqSubj)
		set.Responses.Name, set.Responses.Subjects = *respStream, split(*respSubj)
		set.KVEvents.Name, set.KVEvents.Subjects = *kvStream, split(*kvSubj)
		set.Load.Name, set.Load.Subjects = *loadStream, split(*loadSubj)
		set.DeadLetter.Name, set.DeadLetter.Subjects = *dlqStream, []string{*dlqPrefix + ".>"}
		return cluster(set), *dlqPrefix
	}
}

// streamClusterFlags registers replicas, placement and retention of the
// streams hintstream creates. They apply only to streams it
// creates: an existing stream is attached as it is.
func streamClusterFlags(fs *flag.FlagSet, def streams.Set) func(streams.Set) streams.Set {
	var (
		replicas = fs.Int("stream-replicas", 1, "replicas of every stream, KV bucket and object store hintstream creates (1..5; a JetStream cluster needs as many servers)")
		tags     = fs.String("stream-placement-tags", "", "comma-separated server tags the replicas must be placed on (server_tags); empty: anywhere")
		reqAge   = fs.Duration("requests-max-age", def.Requests.MaxAge, "max_age of a created requests stream; not below --request-index-ttl (0: unlimited)")
		respAge  = fs.Duration("responses-max-age", def.Responses.MaxAge, "max_age of a created responses stream; not below --request-index-ttl (0: unlimited)")
		reqBytes = fs.Int64("requests-max-bytes", 0, "max_bytes of a created requests stream; oldest requests go first (0: unlimited)")
		respByte = fs.Int64("responses-max-bytes", 0, "max_bytes of a created responses stream (0: unlimited)")
	)
	return func(set streams.Set) streams.Set {
		set = set.Apply(streams.Placement{Replicas: *replicas, Tags: split(*tags)})
		set.Requests.MaxAge, set.Requests.MaxBytes = *reqAge, *reqBytes
		set.Responses.MaxAge, set.Responses.MaxBytes = *respAge, *respByte
		return set
	}
}

// checkRetention is the part of run's validation about retention: a
// requests or responses stream must keep a request as long as the
// request index may point at it.
func checkRetention(set streams.Set, requestIndexTTL time.Duration) error {
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
