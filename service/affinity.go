package service

import (
	"context"

	"github.com/hintstream/hintstream/client"
	"github.com/hintstream/hintstream/decide/engine"
)

// startAffinity opens the affinity bucket and starts its writer, unless
// affinity records are off (Config.NoAffinity). The nil interface it
// returns when off keeps the request consumer's hook a no-op.
func (s *Service) startAffinity(ctx context.Context) (engine.AffinityRecorder, error) {
	if s.cfg.NoAffinity {
		return nil, nil
	}
	kv, err := client.OpenAffinityBucket(ctx, s.js, s.cfg.AffinityBucket)
	if err != nil {
		return nil, err
	}
	// Batched asynchronous writes: the bucket is opened on s.js.
	s.affinity = client.NewAffinityWriter(kv, s.Counters.Affinity(), s.log, client.AffinityAsync(s.js))
	// The writer writes what is queued once ctx ends, after the request
	// consumer stopped (stage order, run.go).
	s.lc.run(stageAffinity, "affinity writer", s.affinity.Run)
	s.log.Info("recording prefetch affinity", "bucket", kv.Bucket())
	return s.affinity, nil
}
