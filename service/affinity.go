package service

import (
	"context"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/engine"
)

// startAffinity opens the affinity bucket and starts its writer, unless
// affinity records are off (Config.NoAffinity). The nil interface it
// returns when off keeps the request consumer's hook a no-op.
func (s *Service) startAffinity(ctx context.Context) (engine.AffinityRecorder, error) {
	if s.cfg.NoAffinity {
		return nil, nil
	}
	kv, err := consumers.OpenAffinityBucket(ctx, s.js, s.cfg.AffinityBucket)
	if err != nil {
		return nil, err
	}
	// Batched asynchronous writes: the bucket is opened on s.js.
	s.affinity = consumers.NewAffinityWriter(kv, s.Counters, s.log, consumers.AffinityAsync(s.js))
	// The writer's part writes what is queued once ctx ends, after the
	// request consumer stopped (stage order, run.go).
	s.lc.run(stageAffinity, "affinity writer", func(ctx context.Context) error {
		<-ctx.Done()
		s.affinity.Close()
		return nil
	})
	s.log.Info("recording prefetch affinity", "bucket", kv.Bucket())
	return s.affinity, nil
}
