package service

import (
	"flag"

	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/streams"
)

// registerClusterFlags registers what places this member in a cluster:
// whether start-up may update existing streams, the extra KV-event
// streams of a partitioned cluster, the models it serves (--models, which
// replay shares), and the affinity bucket the frontends read.
//
// --affinity-bucket is on by default: a frontend can only pass a
// wake-up's worker to the router if the record is there when the turn
// comes, and writing it costs one asynchronous KV put per wake-up, off
// the hint's path, in a memory bucket whose entries age out after a
// minute. An empty value turns it off, e.g. where hintstream may not
// create buckets.
func (c *Config) registerClusterFlags(fs *flag.FlagSet) {
	f := c.flags.run
	fs.BoolVar(&c.UpdateStreams, "update-streams", false, "add missing subjects to existing streams (otherwise a mismatch stops start-up)")
	fs.StringVar(&f.kvStreams, "kv-streams", "", "comma-separated extra KV-event streams read beside --kv-events-stream (a partitioned cluster's; attached as they are, never created or purged; each worker's events in order within its stream; snapshots record each stream's sequence); empty: none")
	f.models = cmdline.ModelsFlag(fs)
	fs.StringVar(&c.AffinityBucket, "affinity-bucket", schemas.DefaultAffinityBucket,
		"JetStream KV bucket recording each wake-up's worker per session, for the frontend to pass to the router (client.PreferredWorker); empty: off")
}

// applyClusterFlags gives the buckets the streams' replicas and placement,
// and sets the lists (Validate checks the stream names).
func (c *Config) applyClusterFlags(f *runFlags) error {
	c.Placement = streams.Placement{Replicas: c.Streams.Requests.Replicas, Tags: c.Streams.Requests.PlacementTags}
	c.KVStreams = cmdline.List(f.kvStreams)
	c.NoAffinity = c.AffinityBucket == ""
	var err error
	c.Models, err = f.models()
	return err
}
