package streams

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Reclaimed is what ReclaimChunks purged.
type Reclaimed struct {
	Saves  int    // chunk subjects purged: one per interrupted Put
	Chunks uint64 // their messages
	// Next is how long until the youngest orphan left alone may be
	// judged (0: none left).
	Next time.Duration
}

// ReclaimChunks purges what interrupted Puts left in an object store: a
// Put writes its chunks on $O.<bucket>.C.<nuid> and only then the
// object's meta, so a process killed in between leaves chunks no object
// names, which nothing else ever removes (17 MB per kill for a 61 MiB
// index snapshot). Chunk subjects that no object of obs names and that
// have had no new chunk for grace are purged; the grace keeps a Put under
// way elsewhere (another instance sharing the bucket) safe, since a live
// Put writes chunks back to back.
func ReclaimChunks(ctx context.Context, js jetstream.JetStream, obs jetstream.ObjectStore, bucket string, grace time.Duration) (Reclaimed, error) {
	var r Reclaimed
	st, err := js.Stream(ctx, "OBJ_"+bucket)
	if err != nil {
		return r, err
	}
	prefix := "$O." + bucket + ".C."
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(prefix+">"))
	if err != nil {
		return r, err
	}
	if len(info.State.Subjects) == 0 {
		return r, nil
	}
	named := map[string]bool{}
	objs, err := obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return r, err
	}
	for _, o := range objs {
		named[o.NUID] = true
	}
	for subj, n := range info.State.Subjects {
		if named[strings.TrimPrefix(subj, prefix)] {
			continue
		}
		last, err := st.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // purged meanwhile (the Put that owned it replaced it)
		}
		if err != nil {
			return r, err
		}
		if idle := time.Since(last.Time); idle < grace {
			if wait := grace - idle; r.Next == 0 || wait < r.Next {
				r.Next = wait
			}
			continue
		}
		if err := st.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
			return r, fmt.Errorf("purge %s: %w", subj, err)
		}
		r.Saves++
		r.Chunks += n
	}
	if r.Next > 0 {
		r.Next += time.Second // past the edge, not on it
	}
	return r, nil
}
