package service

import (
	"flag"

	"github.com/hintstream/hintstream/state/snapshots"
)

// registerSnapshotFlags registers the index snapshots' flags: how often
// and where they are saved, how long an interrupted save's chunks idle
// before they are purged, and how much KV-event history a purge behind a
// snapshot keeps.
func (c *Config) registerSnapshotFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", DefaultSnapshotInterval, "save the KV index to the object store this often and at shutdown; start-up loads it and replays only newer KV events; 0: off (none loaded or saved)")
	fs.StringVar(&c.SnapshotBucket, "snapshot-bucket", snapshots.DefaultSnapshotBucket, "object store bucket of index snapshots")
	fs.DurationVar(&c.SnapshotReclaimGrace, "snapshot-reclaim-grace", DefaultSnapshotReclaimGrace, "chunks of an interrupted snapshot save, idle this long, are purged after the next save and at start-up")
	fs.DurationVar(&c.KVEventsKeep, "kv-events-keep", DefaultKVEventsKeep, "after a snapshot is saved, purge the KV events it covers that are older than this, if hintstream created the KV-event stream (a foreign one, such as Dynamo's, is never purged); 0: never purge")
}

// applySnapshotFlags takes the command line's 0 as Off (no snapshots,
// never purge) and refuses negative durations.
func (c *Config) applySnapshotFlags(*runFlags) error {
	switch {
	case c.SnapshotInterval < 0:
		return flagError("--snapshot-interval must not be negative, got %v (0: off)", c.SnapshotInterval)
	case c.SnapshotInterval == 0:
		c.SnapshotInterval = Off // 0 means "off" on the command line
	}
	if c.SnapshotReclaimGrace <= 0 {
		return flagError("--snapshot-reclaim-grace must be positive, got %v", c.SnapshotReclaimGrace)
	}
	switch {
	case c.KVEventsKeep < 0:
		return flagError("--kv-events-keep must not be negative, got %v", c.KVEventsKeep)
	case c.KVEventsKeep == 0:
		c.KVEventsKeep = Off // 0 means "never" on the command line
	}
	return nil
}
