package natstest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hintstream/hintstream/internal/natsembed"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Cluster is an in-process JetStream cluster on loopback whose nodes can
// be killed and restarted on their ports and stores.
type Cluster struct {
	t     testing.TB
	mu    sync.Mutex
	nodes []natsembed.Node
	srv   []*server.Server // nil while a node is down
}

// StartCluster starts n nodes named n1..nN (node i tagged "node:n<i>"),
// routed to each other, and waits until JetStream has a meta leader. The
// nodes are shut down at the end of the test.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{t: t, srv: make([]*server.Server, n)}
	var routes []string
	for i := range n {
		node := natsembed.Node{Name: fmt.Sprintf("n%d", i+1), StoreDir: t.TempDir(),
			Port: FreePort(t), ClusterPort: FreePort(t), Tags: []string{fmt.Sprintf("node:n%d", i+1)}}
		routes = append(routes, natsembed.RouteURL(node.ClusterPort))
		c.nodes = append(c.nodes, node)
	}
	for i := range c.nodes {
		c.nodes[i].Routes = routes
	}
	t.Cleanup(func() {
		for i := range c.nodes {
			c.Kill(i)
		}
	})
	// Start them together: each waits for its peers' routes.
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := natsembed.StartNode(c.nodes[i])
			c.mu.Lock()
			c.srv[i], errs[i] = s, err
			c.mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.WaitReady(60 * time.Second)
	return c
}

// FreePort returns a loopback TCP port nothing listens on (it was just
// closed), for a server a test starts later on a known port.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Len is the number of nodes.
func (c *Cluster) Len() int { return len(c.nodes) }

// Name is node i's server name.
func (c *Cluster) Name(i int) string { return c.nodes[i].Name }

// Index returns the node index of server name, or -1.
func (c *Cluster) Index(name string) int {
	for i, n := range c.nodes {
		if n.Name == name {
			return i
		}
	}
	return -1
}

// URL is node i's client URL (valid while it is down, too).
func (c *Cluster) URL(i int) string { return fmt.Sprintf("nats://127.0.0.1:%d", c.nodes[i].Port) }

// URLs lists every node's client URL, starting with node first, comma
// separated (the form --nats-url and nats.Connect take).
func (c *Cluster) URLs(first int) string {
	urls := []string{c.URL(first)}
	for i := range c.nodes {
		if i != first {
			urls = append(urls, c.URL(i))
		}
	}
	return strings.Join(urls, ",")
}

// Kill shuts node i down (a no-op when it is down).
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	s := c.srv[i]
	c.srv[i] = nil
	c.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

// Restart starts node i again on its ports and store.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	s, err := natsembed.StartNode(c.nodes[i])
	if err != nil {
		c.t.Fatal(err)
	}
	c.mu.Lock()
	c.srv[i] = s
	c.mu.Unlock()
}

// WaitReady waits until a client on some live node gets JetStream
// account info (the cluster has a meta leader and answers).
func (c *Cluster) WaitReady(within time.Duration) {
	c.t.Helper()
	Eventually(c.t, within, func() bool {
		if !c.peersOnline() {
			return false
		}
		for i := range c.nodes {
			c.mu.Lock()
			up := c.srv[i] != nil
			c.mu.Unlock()
			if !up {
				continue
			}
			// Each try gets a stretched second: on a busy machine a
			// fixed one can time out every try while the cluster is fine.
			try := Within(time.Second)
			nc, err := nats.Connect(c.URL(i), nats.Timeout(try))
			if err != nil {
				continue
			}
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), try)
			_, err = js.AccountInfo(ctx)
			cancel()
			nc.Close()
			if err == nil {
				return true
			}
		}
		return false
	}, "JetStream cluster ready")
}

// peersOnline: the meta leader sees every other running node online and
// current. Until it does, placing an R3 stream fails with "no suitable
// peers for placement, peer offline".
func (c *Cluster) peersOnline() bool {
	c.mu.Lock()
	var up []*server.Server
	for _, s := range c.srv {
		if s != nil {
			up = append(up, s)
		}
	}
	c.mu.Unlock()
	for _, s := range up {
		if !s.JetStreamIsLeader() {
			continue
		}
		jsz, err := s.Jsz(&server.JSzOptions{})
		if err != nil || jsz.Meta == nil {
			return false
		}
		online := 0
		for _, p := range jsz.Meta.Replicas {
			if p.Current && !p.Offline {
				online++
			}
		}
		return online >= len(up)-1
	}
	return false // no leader yet
}

// Connect opens a client connection that knows every node (starting at
// node first) and reconnects forever, and a JetStream context; closed at
// the end of the test.
func (c *Cluster) Connect(first int) (*nats.Conn, jetstream.JetStream) {
	c.t.Helper()
	nc, err := nats.Connect(c.URLs(first), nats.Timeout(5*time.Second), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		c.t.Fatal(err)
	}
	return nc, js
}

// StreamLeader is the server name leading stream name ("" if none yet).
func StreamLeader(ctx context.Context, js jetstream.JetStream, name string) string {
	st, err := js.Stream(ctx, name)
	if err != nil || st.CachedInfo().Cluster == nil {
		return ""
	}
	return st.CachedInfo().Cluster.Leader
}

// ConsumerLeader is the server name leading a stream's consumer.
func ConsumerLeader(ctx context.Context, js jetstream.JetStream, stream, consumer string) string {
	cons, err := js.Consumer(ctx, stream, consumer)
	if err != nil || cons.CachedInfo().Cluster == nil {
		return ""
	}
	return cons.CachedInfo().Cluster.Leader
}

// Clients counts the client connections of node i named name (0 when the
// node is down).
func (c *Cluster) Clients(i int, name string) int {
	c.mu.Lock()
	s := c.srv[i]
	c.mu.Unlock()
	if s == nil {
		return 0
	}
	cz, err := s.Connz(&server.ConnzOptions{})
	if err != nil {
		return 0
	}
	n := 0
	for _, ci := range cz.Conns {
		if ci.Name == name {
			n++
		}
	}
	return n
}
