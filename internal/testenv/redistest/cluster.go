package redistest

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
	goredis "github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of the test's own: masters, each with one
// replica, every node a redis-server process on a free loopback port.
type Cluster struct {
	Nodes []*Server
}

// ClusterNodeTimeout is the clusters' cluster-node-timeout: how long a
// master may be unreachable before its replica takes over.
const ClusterNodeTimeout = 2 * time.Second

// StartCluster starts a Cluster of masters masters and as many replicas
// (redis-cli --cluster create … --cluster-replicas 1), waits until every
// node says the cluster is ok and every replica is in sync, and stops
// every node when the test ends.
// It skips like Binary; extra arguments go to every node.
func StartCluster(t testing.TB, masters int, extra ...string) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		Binary(t) // skips when IMAGEGEN_TEST_REDIS is not set
		t.Fatalf("redis-cli is not on PATH: %v", err)
	}
	c := &Cluster{}
	args := []string{"--cluster", "create"}
	for range 2 * masters {
		n := StartServer(t, 0, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", strconv.Itoa(int(ClusterNodeTimeout.Milliseconds()))}, extra...)...)
		c.Nodes = append(c.Nodes, n)
		args = append(args, n.Addr())
	}
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	c.WaitReplicated(t, 30*time.Second)
	return c
}

// WaitOK waits until every running node reports cluster_state:ok and
// knows every node, and every slot is served by a master that answers.
func (c *Cluster) WaitOK(t testing.TB, limit time.Duration) {
	t.Helper()
	ctx := context.Background()
	testenv.EventuallyNoError(t, limit, "the cluster is ok on every node", func() error {
		for _, n := range c.Nodes {
			if n.PID() == 0 {
				continue
			}
			rdb := goredis.NewClient(&goredis.Options{Addr: n.Addr(), MaxRetries: -1})
			info, err := rdb.ClusterInfo(ctx).Result()
			_ = rdb.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", n.Addr(), err)
			}
			if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
				return fmt.Errorf("%s: not ok yet", n.Addr())
			}
		}
		return nil
	})
}

// URL is the cluster's redis+cluster:// URL, every node a seed.
func (c *Cluster) URL() string {
	var q []string
	for _, n := range c.Nodes[1:] {
		q = append(q, "addr="+n.Addr())
	}
	return "redis+cluster://" + c.Nodes[0].Addr() + "?" + strings.Join(q, "&")
}

// Client returns a cluster client on every node, closed when the test
// ends.
func (c *Cluster) Client(t testing.TB) *goredis.ClusterClient {
	t.Helper()
	var addrs []string
	for _, n := range c.Nodes {
		addrs = append(addrs, n.Addr())
	}
	rdb := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Masters are the running nodes that are masters now (by ROLE).
func (c *Cluster) Masters(t testing.TB) []*Server {
	t.Helper()
	var out []*Server
	for _, n := range c.Nodes {
		if n.PID() != 0 && role(t, n) == "master" {
			out = append(out, n)
		}
	}
	return out
}

// role is the first field of ROLE on one server ("" when it does not
// answer).
func role(t testing.TB, s *Server) string {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer rdb.Close()
	r, err := rdb.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(r) == 0 {
		return ""
	}
	name, _ := r[0].(string)
	return name
}

// KeyShares is each running master's share of the keys (DBSIZE), by
// address.
func (c *Cluster) KeyShares(t testing.TB) map[string]float64 {
	t.Helper()
	sizes := map[string]int64{}
	var total int64
	for _, m := range c.Masters(t) {
		rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
		n, err := rdb.DBSize(context.Background()).Result()
		_ = rdb.Close()
		if err != nil {
			t.Fatalf("dbsize %s: %v", m.Addr(), err)
		}
		sizes[m.Addr()] = n
		total += n
	}
	out := map[string]float64{}
	for a, n := range sizes {
		out[a] = float64(n) / float64(max(total, 1))
	}
	return out
}

// Busiest is the running master that holds the most keys.
func (c *Cluster) Busiest(t testing.TB) *Server {
	t.Helper()
	shares := c.KeyShares(t)
	var best *Server
	for _, m := range c.Masters(t) {
		if best == nil || shares[m.Addr()] > shares[best.Addr()] {
			best = m
		}
	}
	return best
}

// WaitReplicated waits until every master has a replica whose link is
// up (a node that came back has rejoined as a replica and synced).
func (c *Cluster) WaitReplicated(t testing.TB, limit time.Duration) {
	t.Helper()
	testenv.EventuallyNoError(t, limit, "every master has a replica in sync", func() error {
		for _, m := range c.Masters(t) {
			rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr(), MaxRetries: -1})
			info, err := rdb.Info(context.Background(), "replication").Result()
			_ = rdb.Close()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "connected_slaves:1") || !strings.Contains(info, "state=online") {
				return fmt.Errorf("master %s has no replica online", m.Addr())
			}
		}
		return nil
	})
	c.WaitOK(t, limit)
}

// KillMaster SIGKILLs master m, waits until its replica has taken over
// (ROLE says master) and the cluster is ok again, and returns the
// replica. Only then may m come back (Start): before, it would take its
// slots back with whatever it kept.
func (c *Cluster) KillMaster(t testing.TB, m *Server) *Server {
	t.Helper()
	var replica *Server
	for _, n := range c.Nodes {
		if n != m && n.PID() != 0 && replicaOf(t, n) == m.Port {
			replica = n
		}
	}
	if replica == nil {
		t.Fatalf("master %s has no replica", m.Addr())
	}
	m.Kill()
	testenv.EventuallyNoError(t, 60*time.Second, "the replica of the killed master takes over", func() error {
		if r := role(t, replica); r != "master" {
			return fmt.Errorf("%s is still %q", replica.Addr(), r)
		}
		return nil
	})
	c.WaitOK(t, 60*time.Second)
	return replica
}

// replicaOf is the port of the master that s replicates (0 for none).
func replicaOf(t testing.TB, s *Server) int {
	t.Helper()
	rdb := goredis.NewClient(&goredis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer rdb.Close()
	r, err := rdb.Do(context.Background(), "ROLE").Slice()
	if err != nil || len(r) < 3 || r[0] != "slave" {
		return 0
	}
	port, _ := r[2].(int64)
	return int(port)
}
