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
	// DefaultLockTTL is the bucket's TTL: a lock its holder stops renewing
	// is gone this long after its last renewal, and another member takes
	// it at its next try.
	DefaultLockTTL = 10 * time.Second
	// DefaultOpTimeout bounds one lock operation.
	DefaultOpTimeout = 2 * time.Second
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

// ElectorConfig configures an Elector.
type ElectorConfig struct {
	// Member names this member in the lock (required, unique in the group).
	Member string
	// Key is the lock's key (default DefaultLeaderKey).
	Key string
	// TTL must be the bucket's TTL (OpenLeaderBucket checks it). The
	// leader renews every RenewEvery (default TTL/3, and below TTL), and
	// a follower tries to take the lock as often.
	TTL, RenewEvery time.Duration
	// OpTimeout bounds one lock operation (default DefaultOpTimeout,
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
	if c.OpTimeout == 0 {
		c.OpTimeout = min(DefaultOpTimeout, c.RenewEvery)
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
// TTL ends a lock not renewed. A member takes the lock by creating the
// key (revision 0) and keeps it by updating it at its revision every
// RenewEvery; an update that fails because the revision moved (or the key
// expired) loses it. Leading holds only until the lease taken before the
// last successful write runs out, so a leader cut off from the server
// stops leading before the server lets anyone else take the lock.
type Elector struct {
	cfg ElectorConfig
	kv  jetstream.KeyValue

	mu       sync.Mutex
	state    Leadership
	rev      uint64
	leaseEnd time.Time // monotonic: Now before the last successful write + TTL
	sawOther bool      // another member held the lock while this one ran
	tried    chan struct{}
	once     sync.Once
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
// lock is deleted at its revision so another member takes it at its next
// try rather than after the TTL. Errors of the store are logged and
// tried again; Run returns nil.
func (e *Elector) Run(ctx context.Context) error {
	t := time.NewTicker(e.cfg.RenewEvery)
	defer t.Stop()
	for {
		e.step(ctx)
		e.once.Do(func() { close(e.tried) })
		select {
		case <-ctx.Done():
			e.stepDown()
			return nil
		case <-t.C:
		}
	}
}

// step renews the lock when leading, or tries to take it.
func (e *Elector) step(ctx context.Context) {
	e.mu.Lock()
	leading, rev := e.state.Leading, e.rev
	e.mu.Unlock()
	octx, cancel := context.WithTimeout(ctx, e.cfg.OpTimeout)
	defer cancel()
	value := []byte(e.cfg.Member)
	start := time.Now()
	if leading {
		next, err := e.kv.Update(octx, e.cfg.Key, value, rev)
		switch {
		case err == nil:
			e.set(func() { e.rev, e.leaseEnd = next, start.Add(e.cfg.TTL) })
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists):
			e.cfg.Logger.Warn("retention planner lock lost", "member", e.cfg.Member, "err", err)
			e.set(func() { e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = false, "", time.Now(), 0 })
			e.look(octx)
		default:
			// The lease still holds until leaseEnd; Leading says so.
			e.cfg.Logger.Warn("retention planner lock not renewed", "member", e.cfg.Member, "err", err)
			if !time.Now().Before(e.lease()) {
				e.set(func() { e.state.Leading, e.state.Since, e.state.Term = false, time.Now(), 0 })
			}
		}
		return
	}
	next, err := e.kv.Create(octx, e.cfg.Key, value)
	switch {
	case err == nil:
		e.cfg.Logger.Info("retention planner lock taken: this member plans for the group", "member", e.cfg.Member)
		e.set(func() {
			e.rev, e.leaseEnd = next, start.Add(e.cfg.TTL)
			e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = true, e.cfg.Member, time.Now(), next
		})
	case errors.Is(err, jetstream.ErrKeyExists):
		e.look(octx)
	default:
		e.cfg.Logger.Warn("retention planner lock not taken", "member", e.cfg.Member, "err", err)
	}
}

// look records who holds the lock.
func (e *Elector) look(ctx context.Context) {
	entry, err := e.kv.Get(ctx, e.cfg.Key)
	if err != nil {
		return // gone meanwhile, or unreachable: the next try tells
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
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.OpTimeout)
	defer cancel()
	if err := e.kv.Delete(ctx, e.cfg.Key, jetstream.LastRevision(rev)); err != nil {
		e.cfg.Logger.Warn("retention planner lock not released; it lapses after its TTL", "member", e.cfg.Member, "err", err)
	} else {
		e.cfg.Logger.Info("retention planner lock released", "member", e.cfg.Member)
	}
	e.set(func() { e.state.Leading, e.state.Leader, e.state.Since, e.state.Term = false, "", time.Now(), 0 })
}
