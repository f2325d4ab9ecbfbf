package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of the group's leader election.
const (
	// DefaultLeaderBucket is the JetStream KV bucket holding the planner
	// lock: one key, whose value is the leader's member name.
	DefaultLeaderBucket = "hintstream_retention_leader"
	// DefaultLeaderKey is the lock's key in the bucket.
	DefaultLeaderKey = "planner"
	// DefaultLockTTL is the bucket's TTL: the server removes a lock its
	// holder stops renewing this long after its last renewal. Followers
	// do not wait for that; they take over once the lease has passed
	// (ElectorConfig.Lease), which is shorter.
	DefaultLockTTL = 10 * time.Second
	// DefaultLockOpTimeout bounds one lock operation.
	DefaultLockOpTimeout = 2 * time.Second
)

// ErrLockBucket marks a leader bucket that cannot hold the lock as
// configured (for example an existing bucket with another TTL).
var ErrLockBucket = errors.New("retention: leader bucket")

// Leadership is what a member knows of the lock: its own name, the
// holder it last saw ("" when none), and whether it leads now.
type Leadership struct {
	Member  string `json:"member"`
	Leader  string `json:"leader,omitempty"`
	Leading bool   `json:"leading"`
	// Since is when this member last took the lock or saw it change hands.
	Since time.Time `json:"since"`
	// Term is the lock's KV revision at which this member took it (0
	// when it does not lead). The bucket's revisions only grow, so a
	// later leader's term is above every earlier one's: it orders the
	// leaders' pins (service: the pins' revisions).
	Term uint64 `json:"term,omitempty"`
}

// ElectorConfig configures an Elector. TTL, RenewEvery and Lease must be
// the same on every member: a follower's wait is only safe against a
// leader that assumes the same lease.
type ElectorConfig struct {
	// Member names this member in the lock (required, unique in the group).
	Member string
	// Key is the lock's key (default DefaultLeaderKey).
	Key string
	// TTL must be the bucket's TTL (OpenLeaderBucket checks it). The
	// leader renews every RenewEvery (default TTL/3; below the lease, so
	// a leader renewing on time never lapses).
	TTL, RenewEvery time.Duration
	// Lease is how long one write of the lock lets its writer lead, and
	// how long a follower waits, on its own clock, after it first saw the
	// lock's latest revision before it takes the lock over (default
	// TTL − RenewEvery/2: 5/6 of the TTL with the default renewal). It is
	// at most the TTL: a member that finds the key gone (expired) takes it
	// at once, which is safe only if every lease ended before the server
	// expired the write that began it.
	Lease time.Duration
	// PollEvery is how often a follower reads the lock (default
	// RenewEvery/6, at most RenewEvery). It sees a renewal, or the delete
	// of a leader that stepped down, at most this late, so it takes over
	// from a dead leader within Lease + PollEvery of its last renewal:
	// TTL − RenewEvery/3 with the defaults. It reads rather than watches:
	// a KV watch needs a consumer on the lock's stream, which the shipped
	// least-privilege user may not create, while a read is a direct get.
	PollEvery time.Duration
	// OpTimeout bounds one lock operation (default DefaultLockOpTimeout,
	// capped at RenewEvery).
	OpTimeout time.Duration
	// OnChange, if set, is called from Run's goroutine when this member
	// starts or stops leading, or sees another leader.
	OnChange func(Leadership)
	Logger   *slog.Logger
}

func (c ElectorConfig) withDefaults() ElectorConfig {
	if c.Key == "" {
		c.Key = DefaultLeaderKey
	}
	if c.TTL == 0 {
		c.TTL = DefaultLockTTL
	}
	if c.RenewEvery == 0 {
		c.RenewEvery = c.TTL / 3
	}
	if c.Lease == 0 {
		c.Lease = c.TTL - c.RenewEvery/2
	}
	if c.PollEvery == 0 {
		c.PollEvery = c.RenewEvery / 6
	}
	if c.OpTimeout == 0 {
		c.OpTimeout = min(DefaultLockOpTimeout, c.RenewEvery)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c ElectorConfig) validate() error {
	switch {
	case c.Member == "":
		return fmt.Errorf("%w: no member name", ErrInvalidOption)
	case c.TTL < 100*time.Millisecond:
		return fmt.Errorf("%w: lock TTL %v (want at least 100ms, JetStream's least max age)", ErrInvalidOption, c.TTL)
	case c.RenewEvery <= 0 || c.RenewEvery >= c.TTL:
		return fmt.Errorf("%w: lock renewal every %v (want in (0, TTL %v))", ErrInvalidOption, c.RenewEvery, c.TTL)
	case c.Lease <= c.RenewEvery || c.Lease > c.TTL:
		return fmt.Errorf("%w: lock lease %v (want in (renewal %v, TTL %v])", ErrInvalidOption, c.Lease, c.RenewEvery, c.TTL)
	case c.PollEvery <= 0 || c.PollEvery > c.RenewEvery:
		return fmt.Errorf("%w: lock read every %v (want in (0, renewal %v])", ErrInvalidOption, c.PollEvery, c.RenewEvery)
	case c.OpTimeout <= 0:
		return fmt.Errorf("%w: lock operation timeout %v", ErrInvalidOption, c.OpTimeout)
	}
	return nil
}

// OpenLeaderBucket attaches to (or creates) the lock bucket with the given
// TTL, and refuses an existing bucket with another TTL: the lease a
// leader assumes must be the one the server enforces.
func OpenLeaderBucket(ctx context.Context, js jetstream.JetStream, bucket string, ttl time.Duration,
	open func(context.Context, jetstream.JetStream, jetstream.KeyValueConfig) (jetstream.KeyValue, error)) (jetstream.KeyValue, error) {
	if bucket == "" {
		bucket = DefaultLeaderBucket
	}
	kv, err := open(ctx, js, jetstream.KeyValueConfig{Bucket: bucket, TTL: ttl, History: 1,
		Description: "hintstream retention planner lock: the key's value is the leading member"})
	if err != nil {
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w %q: status: %w", ErrLockBucket, bucket, err)
	}
	if st.TTL() != ttl {
		return nil, fmt.Errorf("%w %q: its TTL is %v, this member's lock TTL %v: give every member the same --retention-lock-ttl or delete the bucket",
			ErrLockBucket, bucket, st.TTL(), ttl)
	}
	return kv, nil
}

// Elector takes and keeps the planner lock: a key in a KV bucket whose
// TTL removes a lock not renewed. The leader keeps the lock by updating
// it at its revision every RenewEvery, and leads only until Lease after
// it began its last successful write. A follower does not wait for the
// server to expire a dead leader's key: as Kubernetes' leader election
// does (kubernetes/client-go
// tools/leaderelection/leaderelection.go@b4217e149b42e3494fad9477e9c272e470de44e0,
// tryAcquireOrRenew and setObservedRecord), it reads the lock every
// PollEvery, notes when it first saw each revision on its own monotonic
// clock, and once Lease has passed with no newer revision it takes the
// lock with an update at that revision (a compare-and-swap, which fails
// if the leader renewed meanwhile). A key that is gone (deleted on
// step-down, expired, or never made) is taken by creating it.
//
// No two members lead at once: a follower first sees a revision after
// its write was applied, so after its writer began it; it waits Lease
// from there, while the writer leads for Lease from before it, so the
// writer's lease has ended when the follower's compare-and-swap can
// succeed, and a renewal in between moves the revision and fails the
// swap. A key the bucket's TTL expired went TTL ≥ Lease after the write
// began, so its lease had ended too. Only durations are compared, each
// on one machine's clock: clocks may disagree by any offset, but the
// argument assumes they run at the same rate: a follower whose clock runs
// faster by a fraction f ends its wait f × Lease early, and the only
// margin is the time from the leader's start of a write to the
// follower's first read of it (the write's way to the server, and the
// reading delay).
type Elector struct {
	cfg ElectorConfig
	kv  jetstream.KeyValue

	mu       sync.Mutex
	state    Leadership
	rev      uint64
	leaseEnd time.Time // monotonic: Now before the last successful write + Lease
	sawOther bool      // another member held the lock while this one ran
	tried    chan struct{}
	once     sync.Once

	// Run's goroutine alone uses these.
	seen    sighting
	retryAt time.Time // after a failed takeover of the same sighting, not before this
}

// sighting is the lock as this member last saw it change.
type sighting struct {
	known bool      // anything seen yet
	rev   uint64    // the lock's latest revision seen
	at    time.Time // when this member first saw rev (monotonic)
	free  bool      // the key is gone: absent, or its latest revision deletes it
}

// NewElector returns an Elector on kv; Run takes part in the election.
func NewElector(kv jetstream.KeyValue, cfg ElectorConfig) (*Elector, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: no lock bucket", ErrInvalidOption)
	}
	return &Elector{cfg: cfg, kv: kv, state: Leadership{Member: cfg.Member}, tried: make(chan struct{})}, nil
}

// Leading reports whether this member leads now (its lease has not run
// out).
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state.Leading && time.Now().Before(e.leaseEnd)
}

// State is what this member knows of the lock.
func (e *Elector) State() Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.state
	s.Leading = s.Leading && time.Now().Before(e.leaseEnd)
	if !s.Leading {
		s.Term = 0
	}
	return s
}

// Tried is closed once Run has made its first attempt at the lock, so a
// lone member leads before it takes its first request.
func (e *Elector) Tried() <-chan struct{} { return e.tried }

// SawOther reports whether another member held the lock while this one
// ran: a new leader that saw one releases what it does not plan itself.
func (e *Elector) SawOther() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sawOther
}

// Run takes part in the election until ctx ends, then steps down: the
// lock is deleted at its revision so a follower takes it at its next
// read rather than after the lease. Errors of the store are logged and
// tried again; Run returns nil.
func (e *Elector) Run(ctx context.Context) error {
	e.step(ctx)
	e.once.Do(func() { close(e.tried) })
	next := time.NewTimer(e.wait())
	defer next.Stop()
	for {
		select {
		case <-ctx.Done():
			e.stepDown()
			return nil
		case <-next.C:
			e.step(ctx)
			next.Reset(e.wait())
		}
	}
}

// wait is how long until the next step: a renewal, a read, or the moment
// the holder's lease has passed.
func (e *Elector) wait() time.Duration {
	e.mu.Lock()
	leading := e.state.Leading
	e.mu.Unlock()
	if leading {
		return e.cfg.RenewEvery
	}
	d := e.cfg.PollEvery
	if e.seen.known && !e.seen.free {
		at := e.seen.at.Add(e.cfg.Lease)
		if e.retryAt.After(at) {
			at = e.retryAt
		}
		d = max(0, min(d, time.Until(at)))
	}
	return d
}

// step renews the lock when leading; otherwise it reads the lock and
// takes it when it is free or its holder's lease has passed.
func (e *Elector) step(ctx context.Context) {
	e.mu.Lock()
	leading, rev := e.state.Leading, e.rev
	e.mu.Unlock()
	octx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
	defer cancel()
	if leading {
		e.renew(octx, rev)
		return
	}
	e.look(octx)
	if time.Now().Before(e.retryAt) {
		return
	}
	switch {
	case !e.seen.known || e.seen.free:
		e.create(octx)
	case time.Since(e.seen.at) >= e.cfg.Lease:
		e.swap(octx, e.seen.rev)
	}
}

// look reads the lock and records what changed.
func (e *Elector) look(ctx context.Context) {
	entry, err := e.kv.Get(ctx, e.cfg.Key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		e.observeFree()
	case err == nil:
		e.observe(entry)
	}
	// Unreachable: the sighting stands, and the next read tells.
}

// observe records a revision of the lock and who holds it.
func (e *Elector) observe(entry jetstream.KeyValueEntry) {
	// The first sight starts the wait: later reads of the same revision
	// must not restart it, nor may an older one read from a lagging
	// replica, unless the server refused a swap at the newer (the bucket
	// was made again and its revisions restarted). The time is taken after
	// the read returned, so after the write it shows was applied.
	switch r := entry.Revision(); {
	case !e.seen.known, e.seen.free, r > e.seen.rev, r < e.seen.rev && !e.retryAt.IsZero():
		e.seen, e.retryAt = sighting{known: true, rev: r, at: time.Now()}, time.Time{}
	}
	holder := string(entry.Value())
	e.set(func() {
		if holder != e.cfg.Member {
			e.sawOther = true
		}
		if holder != e.state.Leader {
			e.state.Leader, e.state.Since = holder, time.Now()
		}
	})
}

// observeFree records that the key is gone (Get reports a deleted key as
// not found).
func (e *Elector) observeFree() {
	if !e.seen.known || !e.seen.free {
		e.seen, e.retryAt = sighting{known: true, rev: e.seen.rev, at: time.Now(), free: true}, time.Time{}
	}
	e.set(func() {
		if e.state.Leader != "" {
			e.state.Leader, e.state.Since = "", time.Now()
		}
	})
}

func (e *Elector) renew(ctx context.Context, rev uint64) {
	start := time.Now()
	next, err := e.kv.Update(ctx, e.cfg.Key, []byte(e.cfg.Member), rev)
	switch {
	case err == nil:
		e.wrote(next)
		e.set(func() { e.rev, e.leaseEnd = next, start.Add(e.cfg.Lease) })
	case revisionMoved(err):
		e.cfg.Logger.Warn("retention planner lock lost", "member", e.cfg.Member, "err", err)
		e.set(func() { e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = false, "", time.Now(), 0 })
		e.look(ctx)
	default:
		// The lease still holds until leaseEnd; Leading says so.
		e.cfg.Logger.Warn("retention planner lock not renewed", "member", e.cfg.Member, "err", err)
		if !time.Now().Before(e.lease()) {
			e.set(func() { e.state.Leading, e.state.Since, e.state.Term = false, time.Now(), 0 })
		}
	}
}

// swap takes over a lock whose holder let its lease pass: an update at
// the revision this member saw, which fails if the holder renewed.
func (e *Elector) swap(ctx context.Context, rev uint64) {
	start := time.Now()
	next, err := e.kv.Update(ctx, e.cfg.Key, []byte(e.cfg.Member), rev)
	switch {
	case err == nil:
		e.took(next, start, "its holder's lease passed")
	case revisionMoved(err):
		// Renewed or taken meanwhile (the next read shows it), or expired
		// by the bucket's TTL in the moment since the read. A read that
		// still shows this revision (a stale replica) is not retried at
		// once.
		e.retryAt = time.Now().Add(e.cfg.RenewEvery)
		e.create(ctx)
	default:
		e.retryAt = time.Now().Add(e.cfg.RenewEvery)
		e.cfg.Logger.Warn("retention planner lock not taken over", "member", e.cfg.Member, "err", err)
	}
}

// create takes a lock that is gone.
func (e *Elector) create(ctx context.Context) {
	start := time.Now()
	next, err := e.kv.Create(ctx, e.cfg.Key, []byte(e.cfg.Member))
	switch {
	case err == nil:
		e.took(next, start, "it was free")
	case errors.Is(err, jetstream.ErrKeyExists):
		// Taken by another member first: the next read names it.
		e.retryAt = time.Now().Add(e.cfg.RenewEvery)
	default:
		e.retryAt = time.Now().Add(e.cfg.RenewEvery)
		e.cfg.Logger.Warn("retention planner lock not taken", "member", e.cfg.Member, "err", err)
	}
}

// took makes this member the leader from its write at revision next,
// begun at start.
func (e *Elector) took(next uint64, start time.Time, why string) {
	e.cfg.Logger.Info("retention planner lock taken: this member plans for the group", "member", e.cfg.Member,
		"term", next, "because", why)
	e.wrote(next)
	e.set(func() {
		e.rev, e.leaseEnd = next, start.Add(e.cfg.Lease)
		e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = true, e.cfg.Member, time.Now(), next
	})
}

// wrote records this member's own write as seen: should it stop leading
// with no one else writing, its wait as a follower starts from there.
func (e *Elector) wrote(rev uint64) {
	e.seen, e.retryAt = sighting{known: true, rev: rev, at: time.Now()}, time.Time{}
}

// revisionMoved reports an update refused because the lock's revision is
// not the one given (renewed, taken, deleted or expired).
func revisionMoved(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}

func (e *Elector) lease() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leaseEnd
}

// set changes the state under the lock and reports a change to OnChange.
func (e *Elector) set(f func()) {
	e.mu.Lock()
	before := e.state
	f()
	after := e.state
	e.mu.Unlock()
	if e.cfg.OnChange != nil && (before.Leading != after.Leading || before.Leader != after.Leader) {
		e.cfg.OnChange(after)
	}
}

// stepDown deletes the lock at this member's revision when it leads.
func (e *Elector) stepDown() {
	e.mu.Lock()
	leading, rev := e.state.Leading && time.Now().Before(e.leaseEnd), e.rev
	e.mu.Unlock()
	if !leading {
		return
	}
	// Stop leading before the delete: a follower may take the lock as
	// soon as the server applies it.
	e.set(func() { e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = false, "", time.Now(), 0 })
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.OpTimeout)
	defer cancel()
	if err := e.kv.Delete(ctx, e.cfg.Key, jetstream.LastRevision(rev)); err != nil {
		e.cfg.Logger.Warn("retention planner lock not released; a follower takes it once its lease has passed", "member", e.cfg.Member, "err", err)
	} else {
		e.cfg.Logger.Info("retention planner lock released", "member", e.cfg.Member)
	}
}
