package retention

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/observe/metrics"
	"github.com/hintstream/hintstream/streams"
)

const testTTL = time.Second

func openKV(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, _, err := streams.OpenKeyValue(ctx, js, cfg)
	return kv, err
}

func lockBucket(t *testing.T, js jetstream.JetStream) jetstream.KeyValue {
	t.Helper()
	kv, err := OpenLeaderBucket(context.Background(), js, "", testTTL, openKV)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

// running is an Elector run until stop; done closes when Run returned.
type running struct {
	el   *Elector
	stop context.CancelFunc
	done chan struct{}
}

func runElector(t *testing.T, kv jetstream.KeyValue, member string, changes chan<- Leadership) *running {
	t.Helper()
	el, err := NewElector(kv, ElectorConfig{Member: member, TTL: testTTL,
		OnChange: func(l Leadership) {
			if changes != nil {
				changes <- l
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{el: el, stop: cancel, done: make(chan struct{})}
	go func() { defer close(r.done); _ = el.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

// oneLeader waits until exactly one of rs leads and the others name it;
// at no sample may two lead at once.
func oneLeader(t *testing.T, within time.Duration, rs ...*running) *running {
	t.Helper()
	var leader *running
	natstest.Eventually(t, within, func() bool {
		leader = nil
		n := 0
		for _, r := range rs {
			if r.el.Leading() {
				n++
				leader = r
			}
		}
		if n > 1 {
			t.Fatalf("%d members lead at once", n)
		}
		if leader == nil {
			return false
		}
		for _, r := range rs {
			if r.el.State().Leader != leader.el.cfg.Member {
				return false
			}
		}
		return true
	}, "one leader that every member names")
	return leader
}

// Two members: one takes the lock, the other follows and names it; when
// the leader stops it deletes the lock, and the other, which reads the
// lock every PollEvery, takes it at its next read, well within the lease.
func TestElectorOneLeaderThenTakeoverOnStop(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	kv := lockBucket(t, js)
	a := runElector(t, kv, "a", nil)
	b := runElector(t, kv, "b", nil)
	<-a.el.Tried()
	<-b.el.Tried()
	leader := oneLeader(t, 5*time.Second, a, b)
	other := a
	if leader == a {
		other = b
	}
	if !other.el.SawOther() {
		t.Fatal("the follower did not record another member's lock")
	}
	stopped := time.Now()
	leader.stop()
	<-leader.done
	if leader.el.Leading() {
		t.Fatal("a stopped member still leads")
	}
	lease := other.el.cfg.Lease
	natstest.Eventually(t, lease, other.el.Leading, "the other member takes over within the lease after a clean stop")
	took := time.Since(stopped)
	if took >= lease {
		t.Fatalf("takeover after %v: the follower waited out the lease (%v) rather than taking the deleted lock", took, lease)
	}
	t.Logf("takeover %v after a clean stop (TTL %v, lease %v, reads every %v)", took, testTTL, lease, other.el.cfg.PollEvery)
	e, err := kv.Get(context.Background(), DefaultLeaderKey)
	if err != nil || string(e.Value()) != other.el.cfg.Member {
		t.Fatalf("lock holds %v (%v), want %s", e, err, other.el.cfg.Member)
	}
}

// cutConn is a second connection to srv with the lock bucket on it, for
// a member to lose at once.
func cutConn(t *testing.T, srv interface{ ClientURL() string }) (*nats.Conn, jetstream.KeyValue) {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	kv, err := js.KeyValue(context.Background(), DefaultLeaderBucket)
	if err != nil {
		t.Fatal(err)
	}
	return nc, kv
}

// lastWrite is the lock's latest entry, which must be holder's.
func lastWrite(t *testing.T, kv jetstream.KeyValue, holder string) jetstream.KeyValueEntry {
	t.Helper()
	e, err := kv.Get(context.Background(), DefaultLeaderKey)
	if err != nil || string(e.Value()) != holder {
		t.Fatalf("lock holds %v (%v), want %s", e, err, holder)
	}
	return e
}

// takeover waits until next leads, failing on any sample where old leads
// too, and returns when it first saw next lead.
func takeover(t *testing.T, old, next *running) time.Time {
	t.Helper()
	natstest.Eventually(t, testTTL+time.Second, func() bool {
		ol, nl := old.el.Leading(), next.el.Leading()
		if ol && nl {
			t.Fatal("two leaders: the old leader's lease outlived the follower's wait")
		}
		return nl
	}, "%s takes over", next.el.cfg.Member)
	return time.Now()
}

// leaderOnItsOwnConn starts a member named name on a connection of its
// own (closed to cut it off) that takes the lock alone, then a follower
// on the test's connection, and waits until exactly one leads.
func leaderOnItsOwnConn(t *testing.T, name string) (jetstream.KeyValue, *nats.Conn, *running, *running) {
	t.Helper()
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	kv := lockBucket(t, js)
	nc2, kv2 := cutConn(t, srv)
	lead := runElector(t, kv2, name, nil)
	<-lead.el.Tried()
	if !lead.el.Leading() {
		t.Fatal("a lone member did not take the lock at its first try")
	}
	other := runElector(t, kv, "other", nil)
	oneLeader(t, 5*time.Second, lead, other)
	return kv, nc2, lead, other
}

// A leader cut off from the server (its connection closed: a partition)
// keeps running and believes it leads until its lease runs out; the
// follower, counting from when it first read the last renewal, takes the
// lock over by compare-and-swap once the lease has passed, before the
// server expires the key: within the TTL of the last renewal (lease +
// one read period). No sample sees two leaders.
func TestElectorLeaseLapsesWhenCutOff(t *testing.T) {
	kv, nc2, cut, other := leaderOnItsOwnConn(t, "cut")
	nc2.Close()
	cutAt := time.Now()
	last := lastWrite(t, kv, "cut")
	ledAt := takeover(t, cut, other)
	if cut.el.Leading() {
		t.Fatal("the cut-off member still leads")
	}
	took := ledAt.Sub(last.Created())
	if took > testTTL {
		t.Fatalf("takeover %v after the cut-off leader's last renewal, want within the TTL %v", took, testTTL)
	}
	if term := other.el.State().Term; term != last.Revision()+1 {
		t.Fatalf("the follower leads at term %d, want the revision after the last renewal (%d)", term, last.Revision())
	}
	t.Logf("takeover %v after the cut-off leader's last renewal, %v after the cut (TTL %v, lease %v, reads every %v)",
		took, ledAt.Sub(cutAt), testTTL, other.el.cfg.Lease, other.el.cfg.PollEvery)
}

// A leader that dies without a word (a SIGKILL: no delete, no further
// write; here its connection goes before its stop, so the stop's delete
// cannot reach the server) is replaced within the TTL of its last
// renewal, after it had renewed a few times so the death falls inside a
// lease; the lock is the follower's at the next revision, a term above
// the dead leader's.
func TestElectorTakesOverFromSilentLeader(t *testing.T) {
	kv, nc2, dead, other := leaderOnItsOwnConn(t, "dead")
	term := dead.el.State().Term
	natstest.Eventually(t, 5*time.Second, func() bool {
		e, err := kv.Get(context.Background(), DefaultLeaderKey)
		return err == nil && e.Revision() >= term+3
	}, "the leader renews three times")
	nc2.Close()
	killAt := time.Now()
	dead.stop()
	<-dead.done
	last := lastWrite(t, kv, "dead")
	ledAt := takeover(t, dead, other)
	took := ledAt.Sub(last.Created())
	if took > testTTL {
		t.Fatalf("takeover %v after the dead leader's last renewal, want within the TTL %v", took, testTTL)
	}
	lastWrite(t, kv, "other")
	if next := other.el.State().Term; next <= term || next != last.Revision()+1 {
		t.Fatalf("the follower leads at term %d; the dead leader at %d, its last renewal at revision %d", next, term, last.Revision())
	}
	t.Logf("takeover %v after the dead leader's last renewal, %v after the kill (TTL %v, lease %v, reads every %v)",
		took, ledAt.Sub(killAt), testTTL, other.el.cfg.Lease, other.el.cfg.PollEvery)
}

// A bucket made with another TTL is refused: the lease a leader assumes
// must be the server's.
func TestOpenLeaderBucketRefusesAnotherTTL(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	lockBucket(t, js)
	_, err := OpenLeaderBucket(context.Background(), js, "", 3*testTTL, openKV)
	if !errors.Is(err, ErrLockBucket) || !strings.Contains(err.Error(), "TTL") {
		t.Fatalf("open with another TTL: %v", err)
	}
}

func TestGroupConfigValidate(t *testing.T) {
	for _, c := range []GroupConfig{
		{},
		{Elector: ElectorConfig{Member: "m", TTL: 50 * time.Millisecond}},
		{Elector: ElectorConfig{Member: "m", TTL: time.Second, RenewEvery: time.Second}},
		{Elector: ElectorConfig{Member: "m", TTL: time.Second, RenewEvery: 700 * time.Millisecond}}, // lease 650 ms: lapses between renewals
		{Elector: ElectorConfig{Member: "m", TTL: time.Second, Lease: 2 * time.Second}},
		{Elector: ElectorConfig{Member: "m", TTL: time.Second, Lease: 100 * time.Millisecond}},
		{Elector: ElectorConfig{Member: "m", TTL: time.Second, PollEvery: time.Second}},
		{Elector: ElectorConfig{Member: "m"}, FlushEvery: -1},
		{Elector: ElectorConfig{Member: "m"}, MaxBatchBytes: 10},
		{Elector: ElectorConfig{Member: "m"}, MaxQueued: -1},
	} {
		if err := c.WithDefaults().Validate(); !errors.Is(err, ErrInvalidOption) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if err := (GroupConfig{Elector: ElectorConfig{Member: "m"}}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

// member is a Group with a planner fed by its own observations (as the
// service's observer does) and by the others'.
type member struct {
	g       *Group
	p       *Planner
	c       *metrics.Families
	mu      sync.Mutex
	applied int
	stop    context.CancelFunc
	done    chan error
}

func startMember(t *testing.T, srv interface{ ClientURL() string }, name string, dead func(string, *nats.Msg)) *member {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	kv, err := OpenLeaderBucket(context.Background(), js, "", testTTL, openKV)
	if err != nil {
		t.Fatal(err)
	}
	m := &member{p: planner(t, 100), c: metrics.New(), done: make(chan error, 1)}
	m.g, err = NewGroup(GroupConfig{Elector: ElectorConfig{Member: name, TTL: testTTL}, FlushEvery: 10 * time.Millisecond},
		GroupDeps{Conn: nc, Lock: kv, Counters: &m.c.Retention.Group, DeadLetter: dead, Apply: func(o Observation) {
			m.mu.Lock()
			m.applied++
			m.mu.Unlock()
			if o.Kind == ObserveRequest {
				m.p.Request(o.At, o.Session, o.Keys, o.PageTokens)
			} else {
				m.p.ToolCall(o.At, o.Session, o.Expected)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() { m.done <- m.g.Run(ctx) }()
	t.Cleanup(cancel)
	<-m.g.Tried()
	return m
}

func (m *member) observe(o Observation) {
	if o.Kind == ObserveRequest {
		m.p.Request(o.At, o.Session, o.Keys, o.PageTokens)
	}
	m.g.Publish(o)
}

// Each member's observations reach the other's planner and not its own
// a second time; a malformed batch is counted and dead-lettered; Run
// returns on cancel and leaves no goroutine behind.
func TestGroupRelaysObservations(t *testing.T) {
	srv := natstest.Start(t)
	var deadMu sync.Mutex
	var dead []string
	a := startMember(t, srv, "a", nil)
	b := startMember(t, srv, "b", func(reason string, _ *nats.Msg) {
		deadMu.Lock()
		dead = append(dead, reason)
		deadMu.Unlock()
	})
	for i := range 30 {
		a.observe(Observation{Kind: ObserveRequest, At: t0.Add(time.Duration(i) * time.Millisecond), Session: "sa",
			Keys: keys("a", 5), PageTokens: 64})
	}
	for i := range 20 {
		b.observe(Observation{Kind: ObserveRequest, At: t0.Add(time.Duration(i) * time.Millisecond), Session: "sb",
			Keys: keys("b", 3), PageTokens: 64})
	}
	b.observe(Observation{Kind: ObserveToolCall, At: t0.Add(time.Second), Session: "sb", Expected: 5 * time.Second})
	natstest.Eventually(t, 5*time.Second, func() bool {
		return a.c.Retention.Group.Received.Value() == 21 && b.c.Retention.Group.Received.Value() == 30
	}, "a received b's 21 observations (got %d), b a's 30 (got %d)",
		a.c.Retention.Group.Received.Value(), b.c.Retention.Group.Received.Value())
	if f := a.c.Retention.Group.Forwarded.Value(); f != 30 {
		t.Fatalf("a forwarded %d, want 30", f)
	}
	// Each planner tracks both members' pages: 5 + 3.
	for _, m := range []*member{a, b} {
		if st := m.p.Stats(); st.Tracked != 8 || st.Sessions != 2 {
			t.Fatalf("planner of %s tracks %d pages, %d sessions; want 8, 2", m.g.Member(), st.Tracked, st.Sessions)
		}
	}
	a.mu.Lock()
	applied := a.applied
	a.mu.Unlock()
	if applied != 21 {
		t.Fatalf("a applied %d observations, want b's 21 only", applied)
	}
	nc, _ := natstest.Connect(t, srv)
	if err := nc.Publish(DefaultObservationSubject, []byte(`{"v":1,"member":"x","obs":[{"kind":"nope","at_ms":1}]}`)); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		deadMu.Lock()
		defer deadMu.Unlock()
		return b.c.Retention.Group.Dropped.Value("malformed") == 1 && len(dead) == 1 && dead[0] == "kind"
	}, "malformed batch counted and dead-lettered with its reason")
	nc.Close()
	for _, m := range []*member{a, b} {
		m.stop()
		if err := <-m.done; err != nil {
			t.Fatal(err)
		}
	}
	natstest.Eventually(t, 5*time.Second, func() bool {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		return !strings.Contains(stacks, "retention.(*Group)") && !strings.Contains(stacks, "retention.(*Elector)")
	}, "group goroutines left after Run returned")
}

// A member taking over re-pins every slot it wants at once (a shadow plan
// sent nothing); when another member led before, it also releases every
// other slot of the namespace; a lone member's takeover releases nothing.
func TestTakeoverPinsAtOnceAndReleasesOthers(t *testing.T) {
	p := planner(t, 100)
	p.Request(t0, "s", keys("k", 4), 512)
	p.Request(t0.Add(time.Second), "s", keys("k", 4), 512)
	shadow := p.Plan(t0.Add(time.Second))
	if len(shadow) == 0 {
		t.Fatal("no plan")
	}
	if again := p.Plan(t0.Add(time.Second)); again != nil {
		t.Fatal("planned twice within the interval")
	}
	p.Takeover(false, 0)
	fresh := p.Plan(p.Latest())
	if len(fresh) != len(shadow) {
		t.Fatalf("takeover plan has %d actions, the shadow plan %d", len(fresh), len(shadow))
	}
	for _, a := range fresh {
		if a.Kind != "pin" {
			t.Fatalf("lone takeover: %s of %s", a.Kind, a.Slot)
		}
	}
	p.Takeover(true, 0)
	all := p.Plan(p.Latest())
	var renew, release int
	for _, a := range all {
		switch a.Kind {
		case "renew":
			renew++
		case "release":
			release++
		}
	}
	if renew != len(shadow) || release != Bands*Shards-len(shadow) {
		t.Fatalf("takeover after another leader: %d renewals, %d releases; want %d, %d", renew, release, len(shadow), Bands*Shards-len(shadow))
	}
}

func TestBatchRoundTripAndRejects(t *testing.T) {
	obs := []Observation{
		{Kind: ObserveRequest, At: time.UnixMilli(1_700_000_000_123), Session: "s", Keys: []string{"k1", "k2"}, PageTokens: 64},
		{Kind: ObserveToolCall, At: time.UnixMilli(1_700_000_001_000), Session: "s", Expected: 1500 * time.Millisecond},
	}
	data, err := EncodeBatch("m1", obs)
	if err != nil {
		t.Fatal(err)
	}
	b, err := DecodeBatch(data)
	if err != nil {
		t.Fatal(err)
	}
	if b.Member != "m1" || len(b.Observations) != 2 || !b.Observations[0].At.Equal(obs[0].At) ||
		b.Observations[1].Expected != obs[1].Expected || b.Observations[0].Keys[1] != "k2" || b.Observations[0].PageTokens != 64 {
		t.Fatalf("round trip: %+v", b)
	}
	for reason, in := range map[string]string{
		"json":    `{"v":1,`,
		"version": `{"v":2,"member":"m","obs":[]}`,
		"member":  `{"v":1,"obs":[]}`,
		"kind":    `{"v":1,"member":"m","obs":[{"kind":"x","at_ms":1}]}`,
		"value":   `{"v":1,"member":"m","obs":[{"kind":"request","at_ms":1,"keys":["k"]}]}`,
	} {
		_, err := DecodeBatch([]byte(in))
		var be *BatchError
		if !errors.As(err, &be) || be.Reason != reason || !errors.Is(err, ErrMalformedBatch) {
			t.Errorf("%s: %v", in, err)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	data, _ := EncodeBatch("m", []Observation{{Kind: ObserveRequest, At: t0, Session: "s", Keys: []string{"k"}, PageTokens: 16}})
	f.Add(data)
	f.Add([]byte(`{"v":1,"member":"m","obs":[{"kind":"tool_call","at_ms":5,"expected_ms":7}]}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		b, err := DecodeBatch(in)
		if err != nil {
			if !errors.Is(err, ErrMalformedBatch) {
				t.Fatalf("error not ErrMalformedBatch: %v", err)
			}
			return
		}
		// What decodes encodes and decodes to the same.
		again, err := EncodeBatch(b.Member, b.Observations)
		if err != nil {
			t.Fatal(err)
		}
		b2, err := DecodeBatch(again)
		if err != nil || len(b2.Observations) != len(b.Observations) {
			t.Fatalf("re-decode: %v", err)
		}
	})
}

// Two leaders in turn, with the same observations and so the same plan
// numbers: every pin of the later term has a revision above every pin of
// the earlier, and its own trigger (so its own message id); a planner
// that leads no group sends revision 0 (unordered), as before.
func TestTakeoverRevisionsOrderLeaders(t *testing.T) {
	feed := func(p *Planner) {
		for i := range 3 {
			p.Request(t0.Add(time.Duration(i)*time.Second), "s"+strconv.Itoa(i), keys("k"+strconv.Itoa(i), 6), 512)
		}
	}
	lone, old, next := planner(t, 100), planner(t, 100), planner(t, 100)
	for _, p := range []*Planner{lone, old, next} {
		feed(p)
	}
	for _, a := range lone.Plan(lone.Latest()) {
		if a.Revision != 0 {
			t.Fatalf("a planner outside a group ordered %s: revision %d", a.Slot, a.Revision)
		}
	}
	old.Takeover(false, 5)
	next.Takeover(true, 9)
	a, b := old.Plan(old.Latest()), next.Plan(next.Latest())
	if len(a) == 0 || len(b) <= len(a) {
		t.Fatalf("plans of %d and %d actions", len(a), len(b))
	}
	triggers := map[string]bool{}
	var top uint64
	for i, p := range a {
		if p.Revision>>32 != 5 || (i > 0 && p.Revision <= a[i-1].Revision) {
			t.Fatalf("old leader's pin %d: revision %#x", i, p.Revision)
		}
		top = max(top, p.Revision)
		triggers[p.Trigger] = true
	}
	for i, p := range b {
		if p.Revision <= top || (i > 0 && p.Revision <= b[i-1].Revision) {
			t.Fatalf("new leader's %s of %s: revision %#x, the old leader's top %#x", p.Kind, p.Slot, p.Revision, top)
		}
		if triggers[p.Trigger] {
			t.Fatalf("both leaders sent trigger %s", p.Trigger)
		}
	}
}
