package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/consumers"
	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/streams"
)

// One planner for the group: with Config.RetentionGroup every member's
// observer still feeds its own planner, publishes what it observed for
// the others, and applies theirs; only the holder of the planner lock
// sends the plans (package retention, group.go and leader.go).

// deadLetterRetention is the dead-letter kind of an observation batch
// that did not decode.
const deadLetterRetention = "retention_observations"

// DefaultMemberName names this member in the planner lock: the host and
// a random suffix, unique across restarts.
func DefaultMemberName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "hintstream"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}

// startRetentionGroup joins o to the group of Config.RetentionGroup: it
// opens the lock bucket, hands the group's Run to the lifecycle and waits
// for its first attempt at the lock, so a lone member leads before it
// takes a request (and plans exactly as a planner without a group).
func (s *Service) startRetentionGroup(ctx context.Context, o *retentionObserver) error {
	gc := *s.cfg.RetentionGroup
	if gc.Elector.Member == "" {
		gc.Elector.Member = DefaultMemberName()
	}
	gc = gc.WithDefaults()
	if err := gc.Validate(); err != nil {
		return err
	}
	kv, err := retention.OpenLeaderBucket(ctx, s.js, s.cfg.RetentionLockBucket(), gc.Elector.TTL,
		func(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
			kv, _, err := streams.OpenKeyValue(ctx, js, cfg, streams.WithLogger(s.log))
			return kv, err
		})
	if err != nil {
		return fmt.Errorf("retention planner group: %w", err)
	}
	dlq := s.cfg.DeadLetterPrefix + "." + deadLetterRetention
	g, err := retention.NewGroup(gc, retention.GroupDeps{Conn: s.nc, Lock: kv, Apply: o.apply, OnChange: o.leadership,
		Counters: &s.Counters.Retention.Group, Logger: s.log,
		DeadLetter: func(reason string, m *nats.Msg) {
			out := nats.NewMsg(dlq)
			out.Data = m.Data
			out.Header.Set(consumers.HeaderDLQReason, reason)
			out.Header.Set(consumers.HeaderDLQSubject, m.Subject)
			if err := s.nc.PublishMsg(out); err != nil {
				s.log.Warn("retention observation batch not dead-lettered", "err", err)
			}
		}})
	if err != nil {
		return err
	}
	o.group = g
	o.planner.SetGroup(g.State)
	s.lc.run(stageRenewals, "retention planner group", g.Run)
	select {
	case <-g.Tried():
	case <-ctx.Done():
		return ctx.Err()
	}
	st := g.State()
	s.log.Info("retention planner group joined", "member", st.Member, "leader", st.Leader, "leading", st.Leading)
	return nil
}

// RetentionLockBucket is the planner lock's bucket.
func (c Config) RetentionLockBucket() string {
	if c.RetentionGroup != nil && c.RetentionGroup.Bucket != "" {
		return c.RetentionGroup.Bucket
	}
	return retention.DefaultLeaderBucket
}

// apply gives the planner another member's observation.
func (o *retentionObserver) apply(ob retention.Observation) {
	switch ob.Kind {
	case retention.ObserveRequest:
		o.planner.Request(ob.At, ob.Session, ob.Keys, ob.PageTokens)
		o.plan(ob.At)
	case retention.ObserveToolCall:
		o.planner.ToolCall(ob.At, ob.Session, ob.Expected)
	}
}

// leadership starts sending when this member takes the lock: its planner
// has seen the group's observations all along (shadow plans kept its
// estimates current), so it plans at once from them.
func (o *retentionObserver) leadership(l retention.Leadership) {
	if !l.Leading {
		if l.Leader != "" {
			o.log.Info("retention planner follows the group's leader", "member", l.Member, "leader", l.Leader)
		}
		return
	}
	released := o.group.SawOther()
	o.planner.Takeover(released, l.Term)
	st := o.planner.Stats()
	o.log.Info("retention planner leads the group: planning from the estimates it has seen",
		"member", l.Member, "term", l.Term, "tracked", st.Tracked, "sessions", st.Sessions, "release_others", released)
	if at := o.planner.Latest(); !at.IsZero() {
		o.plan(at)
	}
}

// publish hands an observation to the group (no group: nothing).
func (o *retentionObserver) publish(ob retention.Observation) {
	if o.group != nil {
		o.group.Publish(ob)
	}
}

// shadow reports whether this member is in a group and does not lead:
// its plans are not sent.
func (o *retentionObserver) shadow() bool {
	if o.group == nil || o.group.Leading() {
		return false
	}
	o.counters.Retention.Group.ShadowPlans.Inc()
	return true
}
