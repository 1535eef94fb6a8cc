// Package redistest gives tests a real Redis: the server at REDIS_ADDR when
// that is set, otherwise a container started with testcontainers-go, shared
// by all tests of a package. Tests isolate themselves with their own queue
// names, not by flushing.
//
// The image is WAITROOM_TEST_REDIS_IMAGE, by default the public redis image.
// Machines that cannot pull images build a local one with
// scripts/build-images.sh (.ci/run does).
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// DefaultImage is used when WAITROOM_TEST_REDIS_IMAGE is unset.
const DefaultImage = "redis:7-alpine"

// Image returns the Redis image tests start.
func Image() string {
	if img := os.Getenv("WAITROOM_TEST_REDIS_IMAGE"); img != "" {
		return img
	}
	return DefaultImage
}

var shared struct {
	once sync.Once
	addr string
	ctr  *tcredis.RedisContainer
	err  error
}

// Main runs a package's tests and then removes the shared container, if one
// was started. Call it from TestMain: os.Exit(redistest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.ctr != nil {
		if err := testcontainers.TerminateContainer(shared.ctr); err != nil {
			fmt.Fprintln(os.Stderr, "redistest: terminate:", err)
		}
	}
	return code
}

// Addr returns host:port of the package's shared Redis.
func Addr(tb testing.TB) string {
	tb.Helper()
	shared.once.Do(func() {
		if addr := os.Getenv("REDIS_ADDR"); addr != "" {
			shared.addr = addr
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.ctr, shared.err = tcredis.Run(ctx, Image())
		if shared.err != nil {
			return
		}
		shared.addr, shared.err = endpoint(ctx, shared.ctr)
	})
	if shared.err != nil {
		tb.Fatalf("redistest: start redis (image %s): %v", Image(), shared.err)
	}
	return shared.addr
}

// Client returns a client of the shared Redis, closed when the test ends.
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: Addr(tb)})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Container is a Redis of one test's own, which the test may stop and
// start again to see how the service copes with losing Redis.
type Container struct {
	ctr *tcredis.RedisContainer
}

// NewContainer starts a Redis container for one test and removes it when
// the test ends. There is no REDIS_ADDR shortcut: stopping a shared server
// would break other tests.
func NewContainer(tb testing.TB) *Container {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr, err := tcredis.Run(ctx, Image())
	testcontainers.CleanupContainer(tb, ctr)
	if err != nil {
		tb.Fatalf("redistest: start redis (image %s): %v", Image(), err)
	}
	return &Container{ctr: ctr}
}

// Addr returns the container's current host:port. Docker may map a new
// host port after Start, so ask again rather than keep it.
func (c *Container) Addr(ctx context.Context) (string, error) {
	return endpoint(ctx, c.ctr)
}

// Stop stops the container; its data is lost unless persistence is on.
func (c *Container) Stop(ctx context.Context) error {
	timeout := 5 * time.Second
	return c.ctr.Stop(ctx, &timeout)
}

// Start starts a stopped container again.
func (c *Container) Start(ctx context.Context) error {
	return c.ctr.Start(ctx)
}

// Dialer returns a go-redis dialer that looks up the container's address
// on every dial, so a client follows the container across Stop and Start.
func (c *Container) Dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr, err := c.Addr(ctx)
		if err != nil {
			return nil, err
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
}

func endpoint(ctx context.Context, ctr *tcredis.RedisContainer) (string, error) {
	s, err := ctr.ConnectionString(ctx)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(s, "redis://"), nil
}

// Client returns a client with opts (the caller's timeouts and retries)
// that follows the container across Stop and Start; it is closed when the
// test ends.
func (c *Container) Client(tb testing.TB, opts *redis.Options) *redis.Client {
	tb.Helper()
	o := *opts
	o.Dialer = c.Dialer()
	rdb := redis.NewClient(&o)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}

// Pause freezes the container: Redis keeps its connections open but never
// answers, the hardest failure for a client (no error, just silence).
func (c *Container) Pause(ctx context.Context) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.ContainerPause(ctx, c.ctr.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

// Unpause lets a paused container run again.
func (c *Container) Unpause(ctx context.Context) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	_, err = cli.ContainerUnpause(ctx, c.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

// NewClusterNode starts Redis in cluster mode as a one-node cluster that
// owns all 16384 slots, and returns a cluster client of it. Cluster mode
// makes Redis refuse scripts and commands whose keys span slots, which is
// what the queue's hash tags must get right. The client is given the slot
// map itself, because the node announces its address inside Docker's
// network, which the host may not reach.
func NewClusterNode(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr, err := tcredis.Run(ctx, Image(), testcontainers.WithCmd(
		"redis-server", "--cluster-enabled", "yes", "--protected-mode", "no", "--save", "", "--appendonly", "no"))
	testcontainers.CleanupContainer(tb, ctr)
	if err != nil {
		tb.Fatalf("redistest: start redis cluster node (image %s): %v", Image(), err)
	}
	addr, err := endpoint(ctx, ctr)
	if err != nil {
		tb.Fatal(err)
	}
	node := redis.NewClient(&redis.Options{Addr: addr})
	defer node.Close()
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		tb.Fatalf("redistest: assign slots: %v", err)
	}
	for {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil && strings.Contains(info, "cluster_state:ok") {
			break
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("redistest: cluster never became ok: %v %q", err, info)
		case <-time.After(50 * time.Millisecond):
		}
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{addr},
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
			return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: addr}}}}, nil
		},
	})
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}
