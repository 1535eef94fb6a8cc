package failover

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	tcwait "github.com/testcontainers/testcontainers-go/wait"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// setupTimeout bounds building one topology.
const setupTimeout = 90 * time.Second

// image is the Redis image of the tests' containers: these tests build
// topologies of their own, so with REDIS_ADDR set and Docker unusable
// they skip, saying why (redistest.ContainerImage).
func image(t testing.TB) string {
	t.Helper()
	return redistest.ContainerImage(t)
}

// node is one redis-server (or Sentinel) container on a test's network.
type node struct {
	ctr  *testcontainers.DockerContainer
	addr string // container IP:port, reachable from the host
	dead atomic.Bool
	rdb  *redis.Client // closed with the container
}

// newNetwork makes a Docker network for one test, removed when it ends.
func newNetwork(t testing.TB) *testcontainers.DockerNetwork {
	t.Helper()
	// First: where the image falls back to the local one, redistest turns
	// off testcontainers' reaper, whose settings are read on first use.
	image(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	nw, err := network.New(ctx)
	testcontainers.CleanupNetwork(t, nw)
	if err != nil {
		t.Fatalf("docker network: %v", err)
	}
	return nw
}

// startNode runs the test Redis image on nw with cmd, and waits for ready
// in its log. The container is removed when the test ends (before the
// network: cleanups run last first).
func startNode(t testing.TB, nw *testcontainers.DockerNetwork, port int, ready string, files []testcontainers.ContainerFile, cmd ...string) *node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	ctr, err := testcontainers.Run(ctx, image(t),
		network.WithNetwork(nil, nw),
		testcontainers.WithCmd(cmd...),
		testcontainers.WithFiles(files...),
		testcontainers.WithWaitStrategy(tcwait.ForLog(ready).WithStartupTimeout(setupTimeout)),
	)
	testcontainers.CleanupContainer(t, ctr)
	if err != nil {
		t.Fatalf("start %v: %v", cmd, err)
	}
	ip, err := ctr.ContainerIP(ctx)
	if err != nil || ip == "" {
		t.Fatalf("container IP: %q %v", ip, err)
	}
	n := &node{ctr: ctr, addr: net.JoinHostPort(ip, fmt.Sprint(port))}
	n.rdb = redis.NewClient(&redis.Options{Addr: n.addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	t.Cleanup(func() { n.rdb.Close() })
	return n
}

// startNodes starts n nodes at once.
func startNodes(t testing.TB, n int, start func() *node) []*node {
	t.Helper()
	nodes := make([]*node, n)
	var wg sync.WaitGroup
	for i := range n {
		// A failed start marks the test failed and ends its goroutine
		// (t.Fatalf), leaving a nil node, stopped on below.
		wg.Go(func() { nodes[i] = start() })
	}
	wg.Wait()
	for i, n := range nodes {
		if n == nil {
			t.Fatalf("node %d did not start", i)
		}
	}
	return nodes
}

// redisArgs are every data node's: no persistence, reachable on the network.
var redisArgs = []string{"redis-server", "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"}

// kill sends SIGKILL: the node dies as a crashed machine would, without
// a last word to its replicas or clients.
func (n *node) kill(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ContainerKill(ctx, n.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatalf("kill %s: %v", n.addr, err)
	}
	n.dead.Store(true)
}

// client is a plain client of the node.
func (n *node) client(testing.TB) *redis.Client { return n.rdb }

// exec runs a command in the node's container (the image has no shell).
func (n *node) exec(t testing.TB, cmd ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	code, out, err := n.ctr.Exec(ctx, cmd)
	var b []byte
	if out != nil {
		b, _ = io.ReadAll(out)
	}
	if err != nil || code != 0 {
		t.Fatalf("%v: exit %d, %v\n%s", cmd, code, err, b)
	}
	return string(b)
}

// cluster is a Redis Cluster: primaries by address, each with its replica.
type cluster struct {
	nodes    map[string]*node  // by address
	replicas map[string]string // primary address -> its replica's
	url      string
}

// newCluster starts six nodes and makes them a cluster of three primaries
// with one replica each (redis-cli --cluster create, from inside a node).
func newCluster(t testing.TB) *cluster {
	t.Helper()
	nw := newNetwork(t)
	nodes := startNodes(t, 6, func() *node {
		return startNode(t, nw, 6379, "Ready to accept connections", nil, append(append([]string{}, redisArgs...),
			"--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-config-file", "nodes.conf")...)
	})
	args := []string{"redis-cli", "--cluster", "create"}
	c := &cluster{nodes: map[string]*node{}, replicas: map[string]string{}}
	var addrs []string
	for _, n := range nodes {
		args = append(args, n.addr)
		addrs = append(addrs, n.addr)
		c.nodes[n.addr] = n
	}
	nodes[0].exec(t, append(args, "--cluster-replicas", "1", "--cluster-yes")...)
	c.url = "redis-cluster://" + strings.Join(addrs[:3], ",")

	// Ready when every node sees the whole cluster ok and every replica
	// is in sync with its primary.
	ctx := context.Background()
	wait.For(t, 60*time.Second, "cluster ok", func() (bool, string) {
		for _, n := range nodes {
			info, err := n.client(t).ClusterInfo(ctx).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false, fmt.Sprintf("%s: %v %.40q", n.addr, err, info)
			}
		}
		c.replicas = map[string]string{}
		raw, err := nodes[0].client(t).ClusterNodes(ctx).Result()
		if err != nil {
			return false, err.Error()
		}
		ids := map[string]string{} // node id -> address
		primaryOf := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(raw), "\n") {
			f := strings.Fields(line)
			addr, _, _ := strings.Cut(f[1], "@")
			ids[f[0]] = addr
			if strings.Contains(f[2], "slave") {
				primaryOf[addr] = f[3]
			}
		}
		for replica, id := range primaryOf {
			c.replicas[ids[id]] = replica
			info, err := c.nodes[replica].client(t).Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(info, "master_link_status:up") {
				return false, fmt.Sprintf("replica %s: %v", replica, err)
			}
		}
		return len(c.replicas) == 3, fmt.Sprintf("replicas %v", c.replicas)
	})
	return c
}

// primaryOf returns the address of the primary that serves key's slot
// now, as the first live node that answers sees it.
func (c *cluster) primaryOf(t testing.TB, key string) string {
	t.Helper()
	ctx := context.Background()
	for _, n := range c.nodes {
		if n.dead.Load() {
			continue
		}
		slots, err := n.client(t).ClusterSlots(ctx).Result()
		if err != nil {
			continue
		}
		slot, err := n.client(t).ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				return s.Nodes[0].Addr
			}
		}
	}
	t.Fatalf("no primary serves %q", key)
	return ""
}

// liveReplicas returns the primaries whose replica is alive, with it.
func (c *cluster) liveReplicas() map[string]string {
	live := map[string]string{}
	for primary, replica := range c.replicas {
		if !c.nodes[primary].dead.Load() && !c.nodes[replica].dead.Load() {
			live[primary] = replica
		}
	}
	return live
}

// queueOn returns a queue name, prefix-N, whose slot primary serves.
func (c *cluster) queueOn(t testing.TB, primary, prefix string) string {
	t.Helper()
	for i := range 1000 {
		q := fmt.Sprintf("%s-%d", prefix, i)
		if c.primaryOf(t, rediskeys.Waiting(q)) == primary {
			return q
		}
	}
	t.Fatalf("no queue on %s", primary)
	return ""
}

// sentinelSet is a primary and two replicas watched by three Sentinels.
// Two replicas, started at once, so that a second failover needs no new
// container: Docker would give it the killed primary's address, which the
// Sentinels still know as that primary's.
type sentinelSet struct {
	primary   *node
	replicas  []*node
	sentinels []*node
	url       string
}

// masterName is what the Sentinels call the primary.
const masterName = "waitroom"

func newSentinelSet(t testing.TB) *sentinelSet {
	t.Helper()
	nw := newNetwork(t)
	s := &sentinelSet{}
	s.primary = startNode(t, nw, 6379, "Ready to accept connections", nil, redisArgs...)
	primaryIP, _, _ := net.SplitHostPort(s.primary.addr)
	s.replicas = startNodes(t, 2, func() *node {
		return startNode(t, nw, 6379, "Ready to accept connections", nil, append(append([]string{}, redisArgs...), "--replicaof", primaryIP, "6379")...)
	})
	// Down after a second, failed over at once; the file is the Sentinel's
	// to rewrite, so it lives in the writable /data.
	conf := fmt.Sprintf("port 26379\nbind 0.0.0.0\nprotected-mode no\n"+
		"sentinel monitor %[1]s %[2]s 6379 2\n"+
		"sentinel down-after-milliseconds %[1]s 1000\n"+
		"sentinel failover-timeout %[1]s 5000\n"+
		"sentinel parallel-syncs %[1]s 2\n", masterName, primaryIP)
	s.sentinels = startNodes(t, 3, func() *node {
		return startNode(t, nw, 26379, "+monitor master", []testcontainers.ContainerFile{{
			Reader: strings.NewReader(conf), ContainerFilePath: "/data/sentinel.conf", FileMode: 0o666,
		}}, "redis-server", "/data/sentinel.conf", "--sentinel")
	})
	var addrs []string
	for _, n := range s.sentinels {
		addrs = append(addrs, n.addr)
	}
	s.url = "redis-sentinel://" + strings.Join(addrs, ",") + "/0?master_name=" + masterName
	s.waitReady(t)
	return s
}

// waitReady waits until every replica is in sync with the primary and
// every Sentinel names the primary, counts the other two and knows each
// replica as up.
func (s *sentinelSet) waitReady(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	wait.For(t, 60*time.Second, "sentinels ready", func() (bool, string) {
		for _, r := range s.replicas {
			info, err := r.client(t).Info(ctx, "replication").Result()
			if err != nil || !strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_host:"+strings.Split(s.primary.addr, ":")[0]+"\r") {
				return false, fmt.Sprintf("replica %s: %v", r.addr, err)
			}
		}
		for _, sn := range s.sentinels {
			c := redis.NewSentinelClient(&redis.Options{Addr: sn.addr})
			m, err := c.Master(ctx, masterName).Result()
			var replicas []map[string]string
			if err == nil {
				replicas, err = c.Replicas(ctx, masterName).Result()
			}
			c.Close()
			if err != nil {
				return false, err.Error()
			}
			addr := net.JoinHostPort(m["ip"], m["port"])
			if addr != s.primary.addr || m["num-other-sentinels"] != "2" {
				return false, fmt.Sprintf("sentinel %s: master %s, %s other sentinels", sn.addr, addr, m["num-other-sentinels"])
			}
			up := map[string]bool{}
			for _, r := range replicas {
				up[net.JoinHostPort(r["ip"], r["port"])] = r["flags"] == "slave"
			}
			for _, r := range s.replicas {
				if !up[r.addr] {
					return false, fmt.Sprintf("sentinel %s does not know replica %s as up: %v", sn.addr, r.addr, replicas)
				}
			}
		}
		return true, ""
	})
}
