package service

import (
	"flag"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/internal/cmdline"
	"github.com/hintstream/hintstream/state/registry"
)

// registerConsumerFlags registers the consumer group's flags: the group
// and its durable consumers, their ack wait and pending bound, the KV
// apply goroutines, the registry bucket and the grace of a worker whose
// record went away.
func (c *Config) registerConsumerFlags(fs *flag.FlagSet) {
	f := c.flags.run
	fs.StringVar(&c.RegistryBucket, "registry-bucket", registry.DefaultBucket, "JetStream KV bucket of the worker registry")
	fs.StringVar(&f.group, "group", cmdline.Env("HINTSTREAM_GROUP", "hintstream"), "consumer group (env HINTSTREAM_GROUP): every member shares the durable consumers <group>-requests and <group>-responses, and keeps its own index")
	fs.StringVar(&c.RequestsDurable, "requests-durable", "", "durable consumer name for request events (default <group>-requests)")
	fs.BoolVar(&c.RequestsDeliverAll, "requests-deliver-all", false, "a newly created requests consumer starts at the stream's beginning instead of its end")
	fs.StringVar(&c.ResponsesDurable, "responses-durable", "", "durable consumer name for response events (default <group>-responses)")
	fs.DurationVar(&c.AckWait, "ack-wait", consumers.DefaultAckWait, "how long a member may hold a request or response unacked before another member gets it")
	fs.IntVar(&c.MaxAckPending, "max-ack-pending", consumers.DefaultMaxAckPending, "requests or responses one member may hold unacked")
	fs.IntVar(&c.KVApplyShards, "kv-apply-shards", DefaultKVApplyShards, "KV events of different workers applied in parallel on this many goroutines")
	fs.DurationVar(&c.WorkerGrace, "worker-grace", DefaultWorkerGrace,
		"how long a worker whose registry record was deleted or expired keeps its indexed blocks; a re-registration within it resumes with the index intact (0: dropped at once)")
}

// applyConsumerFlags names the durables after the group unless given,
// takes --worker-grace 0 as Off (dropped at once), and refuses bounds a
// consumer cannot take (rather than let Defaults replace them).
func (c *Config) applyConsumerFlags(f *runFlags) error {
	switch {
	case c.AckWait <= 0:
		return flagError("--ack-wait must be positive, got %v", c.AckWait)
	case c.MaxAckPending < 1:
		return flagError("--max-ack-pending must be at least 1, got %d", c.MaxAckPending)
	case c.KVApplyShards < 1:
		return flagError("--kv-apply-shards must be at least 1, got %d", c.KVApplyShards)
	}
	if c.RequestsDurable == "" {
		c.RequestsDurable = f.group + "-requests"
	}
	if c.ResponsesDurable == "" {
		c.ResponsesDurable = f.group + "-responses"
	}
	switch {
	case c.WorkerGrace < 0:
		return flagError("--worker-grace %v must not be negative (0: dropped at once)", c.WorkerGrace)
	case c.WorkerGrace == 0:
		c.WorkerGrace = Off
	}
	return nil
}
