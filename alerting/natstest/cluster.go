package natstest

import (
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Cluster is a JetStream cluster of nats-servers routed to each other on
// 127.0.0.1, each with a store in a test directory.
type Cluster struct {
	Servers []*server.Server
}

// StartCluster starts n clustered servers and waits (bounded) until
// JetStream has a meta leader; they are shut down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	ports := make([]int, n)
	var routes []string
	for i := range ports {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	c := &Cluster{}
	for i := range n {
		o := &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       -1,
			JetStream:  true,
			StoreDir:   t.TempDir(),
			Cluster:    server.ClusterOpts{Name: "natstest", Host: "127.0.0.1", Port: ports[i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
			NoLog:      true,
			NoSigs:     true,
		}
		s, err := server.NewServer(o)
		if err != nil {
			t.Fatalf("natstest: server %d of the cluster: %v", i, err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("natstest: server %d of the cluster is not ready after 10s", i)
		}
		c.Servers = append(c.Servers, s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !c.hasMetaLeader() {
		if time.Now().After(deadline) {
			t.Fatal("natstest: the cluster has no JetStream meta leader after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

func (c *Cluster) hasMetaLeader() bool {
	for _, s := range c.Servers {
		if s.Running() && s.JetStreamIsLeader() {
			return true
		}
	}
	return false
}

// URLs are the client URLs of the servers, comma-separated, as nats.url
// takes them.
func (c *Cluster) URLs() string {
	var us []string
	for _, s := range c.Servers {
		us = append(us, s.ClientURL())
	}
	return strings.Join(us, ",")
}

// StreamLeader is the index of the server that leads stream in the
// default account, or -1 when none does.
func (c *Cluster) StreamLeader(stream string) int {
	for i, s := range c.Servers {
		if s.Running() && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i
		}
	}
	return -1
}
