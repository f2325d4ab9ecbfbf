package main

import (
	"flag"
	"fmt"

	"github.com/hintstream/hintstream/service"
	"github.com/hintstream/hintstream/streams"
)

// clusterFlags registers run's cluster, retention and sharding flags
// (the stream replicas, placement and max-age flags are shared
// with `streams`, in streamflags.go). The returned function validates
// them and fills cfg, whose Streams and RequestIndexTTL must be set.
func clusterFlags(fs *flag.FlagSet) func(cfg *service.Config) error {
	var (
		keep   = fs.Duration("kv-events-keep", service.DefaultKVEventsKeep, "after a snapshot is saved, purge the KV events it covers that are older than this, if hintstream created the KV-event stream (a foreign one, such as Dynamo's, is never purged); 0: never purge")
		models = modelsFlag(fs) // flags_models.go, shared with replay
	)
	return func(cfg *service.Config) error {
		if err := checkRetention(cfg.Streams, cfg.RequestIndexTTL); err != nil {
			return err
		}
		cfg.Placement = streams.Placement{Replicas: cfg.Streams.Requests.Replicas, Tags: cfg.Streams.Requests.PlacementTags}
		switch {
		case *keep < 0:
			return fmt.Errorf("--kv-events-keep must not be negative, got %v", *keep)
		case *keep == 0:
			cfg.KVEventsKeep = service.Off // 0 means "never" on the command line
		default:
			cfg.KVEventsKeep = *keep
		}
		var err error
		cfg.Models, err = models()
		return err
	}
}
