package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/hintstream/hintstream/decide/retention"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/internal/zmqtest"
	"github.com/hintstream/hintstream/schemas"
	"github.com/hintstream/hintstream/state/registry"
	"github.com/hintstream/hintstream/streams"
)

// pinLog is a stand-in Mooncake master's view of the retention pins it
// received (slot "retain:…"), in order.
type pinLog struct {
	mu   sync.Mutex
	pins []schemas.PinPayload
}

func (l *pinLog) add(p schemas.PinPayload) {
	if strings.HasPrefix(p.Slot, "retain:") {
		l.mu.Lock()
		l.pins = append(l.pins, p)
		l.mu.Unlock()
	}
}

func (l *pinLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pins)
}

const groupTTL = time.Second

// groupMember starts a service of the group on srv with the retention
// planner and its group on, named member.
func groupMember(t *testing.T, ctx context.Context, url, pinEP, member string) *Service {
	t.Helper()
	return plannerMember(t, ctx, url, pinEP, &retention.GroupConfig{Elector: retention.ElectorConfig{Member: member, TTL: groupTTL},
		FlushEvery: 10 * time.Millisecond})
}

// plannerMember starts a service with the retention planner, in group
// (nil: alone).
func plannerMember(t *testing.T, ctx context.Context, url, pinEP string, group *retention.GroupConfig) *Service {
	t.Helper()
	st := streams.DefaultSet()
	for _, c := range []*streams.Config{&st.Requests, &st.Responses, &st.KVEvents, &st.Load, &st.DeadLetter} {
		c.Storage = jetstream.MemoryStorage
	}
	svc := New(Config{NATSURL: url, PinEndpoint: pinEP, Streams: st, SnapshotInterval: -1,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		Retention:      &retention.Config{Budget: 1 << 40, Interval: time.Second, Horizon: time.Minute},
		RetentionGroup: group})
	if err := svc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Stop(context.Background()) })
	return svc
}

// Two members of a consumer group share one JetStream: both take
// requests, the leader's planner sees both members' observations, only
// the leader's pins reach the (real ZMQ) pin socket, and when the leader
// stops the other takes over within the lock TTL and pins at once.
func TestRetentionGroupOneLeaderTwoMembers(t *testing.T) {
	srv := natstest.Start(t)
	_, js := natstest.Connect(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var log pinLog
	pinEP := zmqtest.PullPayloads(t, func(b []byte) {
		var p schemas.PinPayload
		if _, err := p.UnmarshalMsg(b); err == nil {
			log.add(p)
		}
	})
	kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	registerPagedWorker(t, ctx, kv)

	a := groupMember(t, ctx, srv.ClientURL(), pinEP, "a")
	if st := a.Retention.Stats().Group; st == nil || !st.Leading || st.Leader != "a" {
		t.Fatalf("a lone first member does not lead at start: %+v", st)
	}
	b := groupMember(t, ctx, srv.ClientURL(), pinEP, "b")
	if st := b.Retention.Stats().Group; st == nil || st.Leading || st.Leader != "a" {
		t.Fatalf("the second member: %+v, want a follower naming a", st)
	}

	// Requests of 8 sessions, 4 pages each, each session's prompt growing
	// by a page a turn, 300 ms of event time apart, until both members
	// have taken some (the durable consumer splits them).
	base := time.Now().Add(-time.Hour).UnixMilli()
	n := 0
	publish := func() {
		s := n % 8
		tokens := make([]uint32, 64+16*(n/8))
		for i := range tokens {
			tokens[i] = uint32(s*100_000 + i)
		}
		body, _ := json.Marshal(schemas.RequestEvent{RequestID: "r" + strconv.Itoa(n), SessionID: "s" + strconv.Itoa(s),
			Model: "m", TokenIDs: tokens, ReceivedAtMs: base + int64(n)*300})
		if _, err := js.Publish(ctx, streams.RequestSubject("m"), body); err != nil {
			t.Fatal(err)
		}
		n++
	}
	received := func(s *Service) uint64 { return s.Counters.RequestsPlain.Value() }
	for range 40 {
		publish()
	}
	natstest.Eventually(t, 20*time.Second, func() bool {
		if received(a)+received(b) == uint64(n) && (received(a) == 0 || received(b) == 0) && n < 400 {
			publish() // one member took everything so far: more traffic
		}
		return received(a) > 0 && received(b) > 0 && received(a)+received(b) == uint64(n)
	}, "both members take requests: a %d, b %d of %d", received(a), received(b), n)

	ga, gb := &a.Counters.Retention.Group, &b.Counters.Retention.Group
	// Every observation either member made reaches the other.
	natstest.Eventually(t, 10*time.Second, func() bool {
		return ga.Forwarded.Value() == received(a) && gb.Forwarded.Value() == received(b) &&
			ga.Received.Value() == received(b) && gb.Received.Value() == received(a)
	}, "observations relayed: a forwarded %d of its %d and received %d of b's %d, b forwarded %d and received %d",
		ga.Forwarded.Value(), received(a), ga.Received.Value(), received(b), gb.Forwarded.Value(), gb.Received.Value())
	if d := ga.Dropped.Total() + gb.Dropped.Total(); d != 0 {
		t.Fatalf("%d observations dropped", d)
	}
	// The leader's planner tracks the pages of every session, whichever
	// member took its requests: 8 sessions × (4 + turns-1) pages.
	pages := 0
	for s := range 8 {
		turns := (n - s + 7) / 8
		pages += 4 + turns - 1
	}
	if st := a.Retention.Stats(); st.Tracked != pages || st.Sessions != 8 {
		t.Fatalf("leader tracks %d pages, %d sessions; want %d, 8", st.Tracked, st.Sessions, pages)
	}
	// Only the leader sends; the follower plans in the shadow.
	natstest.Eventually(t, 10*time.Second, func() bool {
		return a.Counters.Retention.Queued.Value() > 0 && uint64(log.len()) == a.Counters.Retention.Queued.Value()
	}, "the pin socket holds the leader's %d retention pins (got %d)", a.Counters.Retention.Queued.Value(), log.len())
	if q := b.Counters.Retention.Queued.Value(); q != 0 || gb.ShadowPlans.Value() == 0 {
		t.Fatalf("follower queued %d pins, made %d shadow plans", q, gb.ShadowPlans.Value())
	}
	if ga.Leader.Value() != 1 || gb.Leader.Value() != 0 {
		t.Fatalf("leader gauges a %v b %v", ga.Leader.Value(), gb.Leader.Value())
	}

	// The leader stops: b takes over within the TTL and pins at once,
	// from the estimates it kept, releasing what it does not want.
	before := log.len()
	stopped := time.Now()
	a.Stop(context.Background())
	natstest.Eventually(t, groupTTL, func() bool { st := b.Retention.Stats().Group; return st.Leading && st.Leader == "b" },
		"b takes the lock")
	if took := time.Since(stopped); took > groupTTL {
		t.Fatalf("b took the lock %v after the stop, want within the TTL %v", took, groupTTL)
	}
	// The takeover plan names every slot; wait for all of it, not for the
	// first pins that happen to be on the socket while the rest are queued.
	slots := retention.Bands * retention.Shards
	natstest.Eventually(t, 5*time.Second, func() bool {
		q := int(b.Counters.Retention.Queued.Value())
		return q >= slots && log.len() == before+q
	}, "b's takeover plan reaches the socket (b queued %d, socket %d new, want %d)", b.Counters.Retention.Queued.Value(), log.len()-before, slots)
	if took := time.Since(stopped); took > groupTTL+5*time.Second {
		t.Fatalf("takeover and first pins %v after the stop", took)
	}
	var pinned, released int
	log.mu.Lock()
	for _, p := range log.pins[before : before+slots] {
		if p.TTLMs > 0 {
			pinned++
		} else {
			released++
		}
	}
	log.mu.Unlock()
	if pinned == 0 || released == 0 || pinned+released != slots {
		t.Fatalf("b's takeover plan: %d pins, %d releases; want every slot of the namespace pinned or released", pinned, released)
	}
	if gb.Takeovers.Value() != 1 || gb.Leader.Value() != 1 {
		t.Fatalf("b takeovers %d, leader gauge %v", gb.Takeovers.Value(), gb.Leader.Value())
	}
}

// registerPagedWorker registers worker 1 of model m with 16-token pages.
func registerPagedWorker(t *testing.T, ctx context.Context, kv jetstream.KeyValue) {
	t.Helper()
	if err := registry.Put(ctx, kv, schemas.WorkerRecord{WorkerID: 1, Model: "m", KvBlockSize: 16,
		HintEndpoints: []string{"tcp://127.0.0.1:1"},
		ObjectLayout: &schemas.ObjectLayout{PageSize: 16, HicacheObjectLayout: schemas.HicacheObjectLayout{KeyPrefix: "m",
			Pools: []schemas.LayoutPool{{Pool: "kv", Suffixes: []string{"_k"}, HitPolicy: "all_pages"}}}}}); err != nil {
		t.Fatal(err)
	}
}

// A lone member of a group plans and sends exactly what a planner without
// a group does: the same pin actions, in the same order, for the same
// requests.
func TestRetentionGroupLoneMemberPlansAsAlone(t *testing.T) {
	run := func(group *retention.GroupConfig) []string {
		srv := natstest.Start(t)
		_, js := natstest.Connect(t, srv)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var log pinLog
		pinEP := zmqtest.PullPayloads(t, func(b []byte) {
			var p schemas.PinPayload
			if _, err := p.UnmarshalMsg(b); err == nil {
				log.add(p)
			}
		})
		kv, err := registry.Bucket(ctx, js, registry.DefaultBucket)
		if err != nil {
			t.Fatal(err)
		}
		registerPagedWorker(t, ctx, kv)
		svc := plannerMember(t, ctx, srv.ClientURL(), pinEP, group)
		base := time.Now().Add(-time.Hour).UnixMilli()
		const n = 60
		for i := range n {
			s := i % 5
			tokens := make([]uint32, 64+16*(i/5))
			for j := range tokens {
				tokens[j] = uint32(s*100_000 + j)
			}
			body, _ := json.Marshal(schemas.RequestEvent{RequestID: "r" + strconv.Itoa(i), SessionID: "s" + strconv.Itoa(s),
				Model: "m", TokenIDs: tokens, ReceivedAtMs: base + int64(i)*700})
			if _, err := js.Publish(ctx, streams.RequestSubject("m"), body); err != nil {
				t.Fatal(err)
			}
		}
		natstest.Eventually(t, 20*time.Second, func() bool {
			q := svc.Counters.Retention.Queued.Value()
			return svc.Counters.RequestsPlain.Value() == n && q > 0 && uint64(log.len()) == q
		}, "%d requests taken (got %d) and every pin queued received", n, svc.Counters.RequestsPlain.Value())
		log.mu.Lock()
		defer log.mu.Unlock()
		out := make([]string, len(log.pins))
		for i, p := range log.pins {
			out[i] = fmt.Sprintf("%s ttl=%d prio=%d tokens=%d keys=%v", p.Slot, p.TTLMs, p.Priority, p.Tokens, p.Keys)
		}
		return out
	}
	alone := run(nil)
	lone := run(&retention.GroupConfig{Elector: retention.ElectorConfig{Member: "only", TTL: groupTTL}})
	if !slices.Equal(alone, lone) {
		t.Fatalf("a lone group member sent %d pin actions, a planner alone %d; first difference:\n%s",
			len(lone), len(alone), firstDiff(alone, lone))
	}
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return "alone: " + a[i] + "\ngroup: " + b[i]
		}
	}
	return fmt.Sprintf("lengths %d, %d", len(a), len(b))
}
