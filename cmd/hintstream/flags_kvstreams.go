package main

import (
	"flag"

	"github.com/hintstream/hintstream/service"
)

// kvStreamsFlag registers --kv-streams; the returned function fills cfg
// (service.Config.Validate checks the names).
func kvStreamsFlag(fs *flag.FlagSet) func(cfg *service.Config) {
	names := fs.String("kv-streams", "", "comma-separated extra KV-event streams read beside --kv-events-stream (a partitioned cluster's; attached as they are, never created or purged; each worker's events in order within its stream; snapshots record each stream's sequence); empty: none")
	return func(cfg *service.Config) { cfg.KVStreams = split(*names) }
}
