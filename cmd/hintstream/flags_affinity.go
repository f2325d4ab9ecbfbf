package main

import (
	"flag"

	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/service"
)

// affinityFlags registers --affinity-bucket and returns what applies it.
//
// On by default: a frontend can only pass a wake-up's worker to the router
// if the record is there when the turn comes, and writing it costs one
// asynchronous KV put per wake-up, off the hint's path, in a memory
// bucket whose entries age out after a minute. An empty value turns it
// off, e.g. where hintstream may not create buckets.
func affinityFlags(fs *flag.FlagSet) func(*service.Config) {
	bucket := fs.String("affinity-bucket", schemas.DefaultAffinityBucket,
		"JetStream KV bucket recording each wake-up's worker per session, for the frontend to pass to the router (client.PreferredWorker); empty: off")
	return func(c *service.Config) {
		c.AffinityBucket, c.NoAffinity = *bucket, *bucket == ""
	}
}
