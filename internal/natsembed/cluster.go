package natsembed

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/nats-io/nats-server/v2/server"
)

// Node is one server of an in-process JetStream cluster (for tests and
// the cluster fault test): loopback only, fixed ports so that a restarted
// node comes back where its peers and clients expect it.
type Node struct {
	Name        string
	StoreDir    string
	Port        int      // client port; required
	ClusterPort int      // route port; required
	Routes      []string // every node's route URL, this one's included
	ClusterName string   // default "hintstream"
	Tags        []string // server tags, for placement
}

// RouteURL is the route URL of a node on loopback port p.
func RouteURL(p int) string { return fmt.Sprintf("nats://127.0.0.1:%d", p) }

// StartNode starts n and waits until it accepts client connections (not
// until the cluster has a JetStream leader: that needs a quorum of nodes).
func StartNode(n Node) (*server.Server, error) {
	if n.StoreDir == "" || n.Port <= 0 || n.ClusterPort <= 0 || n.Name == "" {
		return nil, errors.New("natsembed: a cluster node needs Name, StoreDir, Port and ClusterPort")
	}
	if n.ClusterName == "" {
		n.ClusterName = "hintstream"
	}
	routes := make([]*url.URL, 0, len(n.Routes))
	for _, r := range n.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("natsembed: route %q: %w", r, err)
		}
		routes = append(routes, u)
	}
	opts := &server.Options{
		ServerName: n.Name, Host: "127.0.0.1", Port: n.Port,
		JetStream: true, StoreDir: n.StoreDir, NoLog: true, NoSigs: true,
		Cluster: server.ClusterOpts{Name: n.ClusterName, Host: "127.0.0.1", Port: n.ClusterPort},
		Routes:  routes, Tags: n.Tags,
	}
	return run(opts, "node "+n.Name)
}
