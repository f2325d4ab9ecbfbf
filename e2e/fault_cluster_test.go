package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/actions"
	"github.com/hintstream/hintstream/internal/natstest"
	"github.com/hintstream/hintstream/streams"
	"github.com/nats-io/nats.go/jetstream"
)

// clusterPublisher stores wake-ups at a fixed pace, retrying each until
// JetStream acks it (the message id makes a retry of a stored one a
// no-op), and remembers when each was first tried and acked.
type clusterPublisher struct {
	t      *testing.T
	js     jetstream.JetStream
	prompt []uint32

	mu      sync.Mutex
	next    int               // next new wake-up id
	retry   []int             // ids to try again
	first   map[int]time.Time // first attempt
	ackedAt map[int]time.Time
	retries int
}

func (p *clusterPublisher) nextID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

func (p *clusterPublisher) retryCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.retries
}

func (p *clusterPublisher) acked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ackedAt)
}

// run publishes batch wake-ups every tick (1,000/s at 50 per 50ms) until
// ctx ends or total have been acked.
func (p *clusterPublisher) run(ctx context.Context, total, batch int, tick time.Duration) {
	tk := time.NewTicker(tick)
	defer tk.Stop()
	for p.acked() < total {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		p.mu.Lock()
		ids := p.retry
		p.retry = nil
		for len(ids) < batch && p.next < total {
			p.first[p.next] = time.Now()
			ids = append(ids, p.next)
			p.next++
		}
		p.mu.Unlock()
		futs := make([]jetstream.PubAckFuture, len(ids))
		for k, i := range ids {
			id := fmt.Sprintf("c-%d", i)
			f, err := p.js.PublishAsync(streams.RequestSubject(model), wakeBody(p.t, id, p.prompt), jetstream.WithMsgID(id))
			if err == nil {
				futs[k] = f
			}
		}
		var again []int
		// One deadline for the batch; each wait gets what is left of it (a
		// single time.After channel would fire for the first wait only, and
		// an ack lost with a dying leader would then block forever).
		deadline := time.Now().Add(3 * time.Second)
		for k, f := range futs {
			ok := false
			if f != nil {
				select {
				case <-f.Ok():
					ok = true
				case <-f.Err():
				case <-time.After(time.Until(deadline)):
				}
			}
			p.mu.Lock()
			if ok {
				if _, seen := p.ackedAt[ids[k]]; !seen {
					p.ackedAt[ids[k]] = time.Now()
				}
			} else {
				again = append(again, ids[k])
			}
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.retry = append(p.retry, again...)
		p.retries += len(again)
		p.mu.Unlock()
	}
}

// TestFaultClusterLeaderLoss: a 3-node JetStream cluster with R3 streams,
// two hintstream members on different nodes (each given every node's
// URL), 1,000 wake-ups/s. The node leading LLM_REQUESTS is killed, then
// the node leading the group's requests consumer (which costs the
// cluster its quorum), then both are restarted. Every wake-up JetStream
// acked is hinted, duplicates are counted, both members reconnect to
// surviving nodes by themselves, and the time to recover is measured.
func TestFaultClusterLeaderLoss(t *testing.T) {
	t.Parallel() // waits on processes more than it computes: beside the other long waits (docs/benchmarks.md)
	const total, batch, tick = 12000, 50, 50 * time.Millisecond
	c := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Within(4*time.Minute))
	defer cancel()
	_, js := c.Connect(2)

	member := func(node int) *proc {
		return start(t, "run", "--nats-url", c.URLs(node), "--group", "cl", "--log-format", "json",
			"--stream-replicas", "3", "--prefetch-ttl", "5m", "--ack-wait", "5s", "--snapshot-interval", "0")
	}
	a := member(0)
	a.waitLine(t, 60*time.Second, "hintstream running")
	b := member(1)
	b.waitLine(t, 60*time.Second, "hintstream running")
	// The client picks its first node from the list at random: start b
	// again until the two members sit on different nodes.
	shared := func() bool {
		for i := range c.Len() {
			if c.Clients(i, "hintstream") > 1 {
				return true
			}
		}
		return false
	}
	for try := 1; shared(); try++ {
		if try > 10 {
			t.Fatal("the two members kept connecting to one node")
		}
		b.stop(t)
		b = member(1)
		b.waitLine(t, 60*time.Second, "hintstream running")
	}
	for _, name := range []string{"LLM_REQUESTS", "KV_EVENTS", "KV_LOAD"} {
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n := st.CachedInfo().Config.Replicas; n != 3 {
			t.Fatalf("%s has %d replicas, want 3", name, n)
		}
	}
	sink := workerSink(t, ctx, js, 1)
	a.waitLine(t, 10*time.Second, "worker joined")
	b.waitLine(t, 10*time.Second, "worker joined")

	pub := &clusterPublisher{t: t, js: js, prompt: seq(11, 64), first: map[int]time.Time{}, ackedAt: map[int]time.Time{}}
	pubDone := make(chan struct{})
	go func() { defer close(pubDone); pub.run(ctx, total, batch, tick) }()

	// recovered waits until a wake-up first published after at (ids from
	// the publisher's next id at that moment) is hinted, and returns how
	// long after at that hint arrived. It polls every 20 ms and reads only
	// the hints it has not seen, so it takes little from the publisher.
	recovered := func(at time.Time, what string) time.Duration {
		t.Helper()
		pub.mu.Lock()
		from := pub.next
		pub.mu.Unlock()
		within := natstest.Within(90 * time.Second)
		deadline := time.Now().Add(within)
		var took time.Duration
		seen := 0
		for took == 0 {
			got := sink.received()
			for _, r := range got[seen:] {
				var i int
				if _, err := fmt.Sscanf(r.requestID, "c-%d", &i); err == nil && i >= from {
					if d := r.at.Sub(at); took == 0 || d < took {
						took = d
					}
				}
			}
			seen = len(got)
			if took > 0 {
				break
			}
			if time.Now().After(deadline) {
				sl := natstest.StreamLeader(ctx, js, "LLM_REQUESTS")
				cl := natstest.ConsumerLeader(ctx, js, "LLM_REQUESTS", "cl-requests")
				t.Fatalf("no wake-up published after %s hinted within %v: %d acked, next id %d (from %d), %d retries; stream leader %q, consumer leader %q",
					what, within, pub.acked(), pub.nextID(), from, pub.retryCount(), sl, cl)
			}
			<-time.After(20 * time.Millisecond) // a poll interval, not a synchronisation
		}
		return took
	}
	waitAcked := func(n int) {
		t.Helper()
		natstest.Eventually(t, 90*time.Second, func() bool { return pub.acked() >= n }, "%d wake-ups acked", n)
	}

	waitAcked(2000)
	// The client picks its node from the list at random, so make sure a
	// member's node is the one that dies: until LLM_REQUESTS is led by a
	// node a member is connected to, ask its leader to step down in favour
	// of such a node. The transfer can fail (a preferred peer whose log
	// lags loses the election, an answer is lost on a busy machine), so it
	// is asked again, but only once an election has ended: a stepdown sent
	// while one is under way only starts another.
	memberOn := func(name string) bool {
		i := c.Index(name)
		return i >= 0 && c.Clients(i, "hintstream") > 0
	}
	var asked time.Time
	stepdowns := 0
	streamLeader := -1
	natstest.Eventually(t, 60*time.Second, func() bool {
		leader := natstest.StreamLeader(ctx, js, "LLM_REQUESTS")
		if leader == "" {
			return false // an election under way, or no answer yet
		}
		if memberOn(leader) {
			streamLeader = c.Index(leader)
			return true
		}
		if time.Since(asked) < 2*time.Second {
			return false // the last stepdown's election may not have ended
		}
		// Take turns among the members' nodes: one whose log lags would
		// lose every election it was offered.
		var to []string
		for i := range c.Len() {
			if name := c.Name(i); name != leader && memberOn(name) {
				to = append(to, name)
			}
		}
		if len(to) > 0 {
			pref := to[stepdowns%len(to)]
			req := fmt.Sprintf(`{"placement":{"preferred":%q}}`, pref)
			_, err := js.Conn().Request("$JS.API.STREAM.LEADER.STEPDOWN.LLM_REQUESTS", []byte(req), 5*time.Second)
			stepdowns++
			t.Logf("stepdown %d: LLM_REQUESTS leader %s asked to hand over to %s (request error: %v)", stepdowns, leader, pref, err)
		}
		asked = time.Now()
		return false
	}, "LLM_REQUESTS led by a node a member is connected to")
	t.Logf("LLM_REQUESTS led by %s after %d stepdowns", c.Name(streamLeader), stepdowns)
	// Members on a node about to die must reconnect to a survivor.
	dropped := c.Clients(streamLeader, "hintstream")
	kill1 := time.Now()
	c.Kill(streamLeader)
	t.Logf("killed %s, leader of LLM_REQUESTS", c.Name(streamLeader))
	rec1 := recovered(kill1, "the stream leader's death")
	waitAcked(pub.acked() + 2000)

	var consLeader int
	natstest.Eventually(t, 30*time.Second, func() bool {
		consLeader = c.Index(natstest.ConsumerLeader(ctx, js, "LLM_REQUESTS", "cl-requests"))
		return consLeader >= 0 && consLeader != streamLeader
	}, "a live leader of the requests consumer")
	ackedAtKill2 := pub.acked()
	dropped += c.Clients(consLeader, "hintstream")
	kill2 := time.Now()
	c.Kill(consLeader)
	t.Logf("killed %s, leader of consumer cl-requests (one node of three left: no quorum)", c.Name(consLeader))
	// Without a quorum nothing is stored; hold the outage a few seconds
	// (the publisher keeps retrying) before bringing both back.
	natstest.Eventually(t, 30*time.Second, func() bool { return time.Since(kill2) > 3*time.Second }, "outage held")
	restart := time.Now()
	c.Restart(streamLeader)
	c.Restart(consLeader)
	t.Logf("restarted %s and %s", c.Name(streamLeader), c.Name(consLeader))
	rec2 := recovered(restart, "the restart")

	select {
	case <-pubDone:
	case <-ctx.Done():
		t.Fatalf("publishing did not finish: %d of %d acked", pub.acked(), total)
	}
	natstest.Eventually(t, 90*time.Second, func() bool { d, _ := sink.counts(); return d >= total },
		"every acked wake-up hinted")
	allHinted := time.Since(restart)
	for _, p := range []*proc{a, b} {
		alive(t, p)
	}
	// Each member whose node died reconnected to another by itself (the
	// client picks its first node from the list at random, so which
	// members that is varies from run to run).
	reconnects := 0
	for _, p := range []*proc{a, b} {
		for _, l := range p.lines(&p.errs) {
			if strings.Contains(l, "nats reconnected") {
				reconnects++
			}
		}
	}
	if dropped == 0 || reconnects < dropped {
		t.Errorf("%d member connections were on killed nodes, %d reconnects logged", dropped, reconnects)
	}
	distinct, dups := sink.counts()
	for i := range total {
		if sink.count(actions.PrefetchMessageID(fmt.Sprintf("c-%d", i))) == 0 {
			t.Fatalf("acked wake-up c-%d never hinted", i)
		}
	}
	a.stop(t)
	b.stop(t)
	figure(t, "cluster", "wakeups", total, "lost", total-distinct, "duplicates", dups, "publish_retries", pub.retries,
		"acked_before_quorum_loss", ackedAtKill2, "stream_leader_kill_to_first_new_hint_ms", rec1.Milliseconds(),
		"outage_ms", restart.Sub(kill2).Milliseconds(), "restart_to_first_new_hint_ms", rec2.Milliseconds(),
		"restart_to_all_hinted_ms", allHinted.Milliseconds(), "members_on_killed_nodes", dropped, "member_reconnects", reconnects)
}
