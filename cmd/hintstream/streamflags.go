package main

import (
	"flag"
	"strings"

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
		dlqPrefix  = fs.String("dead-letter-prefix", "hintstream.dlq", "dead-letter subject prefix; copies go to <prefix>.<kind>")
	)
	return func() (streams.Set, string) {
		set := def
		set.Requests.Name, set.Requests.Subjects = *reqStream, split(*reqSubj)
		set.Responses.Name, set.Responses.Subjects = *respStream, split(*respSubj)
		set.KVEvents.Name, set.KVEvents.Subjects = *kvStream, split(*kvSubj)
		set.Load.Name, set.Load.Subjects = *loadStream, split(*loadSubj)
		set.DeadLetter.Name, set.DeadLetter.Subjects = *dlqStream, []string{*dlqPrefix + ".>"}
		return set, *dlqPrefix
	}
}
