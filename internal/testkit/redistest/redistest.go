// Package redistest gives tests a real Redis: the server at REDIS_ADDR when
// that is set, otherwise a container started with testcontainers-go, shared
// by all tests of a package. Tests isolate themselves with their own queue
// names, not by flushing.
//
// The image is WAITROOM_TEST_REDIS_IMAGE; unset, the public redis image, or
// where that cannot be pulled the local waitroom/redis:local that
// scripts/test.sh (and scripts/build-images.sh redis) builds from this
// host's redis-server. A few tests need a Redis of their own, to stop,
// pause or run in cluster mode (NewContainer, NewClusterNode): they need
// Docker even with REDIS_ADDR set, and skip without it.
package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// LogsEnv, set to 1, keeps testcontainers' own lines (pulls, starts,
// health checks). Otherwise they are dropped: they are many, go to the
// test log whatever the test, and say nothing a failure's error does not.
const LogsEnv = "WAITROOM_TEST_CONTAINER_LOGS"

func init() {
	if os.Getenv(LogsEnv) != "1" {
		tclog.SetDefault(tclog.NewNoopLogger())
	}
}

// DefaultImage is used when WAITROOM_TEST_REDIS_IMAGE is unset.
const DefaultImage = "redis:7-alpine"

// LocalImage is the image scripts/build-images.sh redis builds without any
// registry; tests fall back to it when DefaultImage cannot be pulled.
const LocalImage = "waitroom/redis:local"

// howTo is what to do when no Redis image can be had: said in every such
// failure, because the bare testcontainers error ("no such host") does not.
const howTo = "run the tests with scripts/test.sh, which builds " + LocalImage +
	" from this host's redis-server when images cannot be pulled; or run" +
	" scripts/build-images.sh redis and set WAITROOM_TEST_REDIS_IMAGE=" + LocalImage +
	"; or set REDIS_ADDR to a Redis for all but the tests that stop or pause one"

// imageChoice is Image's answer, worked out once per test binary.
type imageChoice struct {
	once sync.Once
	name string
	err  error
}

var image = new(imageChoice)

// Image returns the Redis image tests start, pulling DefaultImage if need
// be; the choice is made once per test binary.
func Image() (string, error) {
	c := image
	c.once.Do(func() {
		localDockerHost()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c.name, c.err = pickImage(ctx, DefaultImage, LocalImage)
	})
	return c.name, c.err
}

// localDockerHost makes a plain `go test` find the containers' mapped
// ports as scripts/test.sh does: run inside a container, testcontainers
// looks for them on the default gateway, but with a local socket they are
// on localhost. It must run before testcontainers first reads its settings.
func localDockerHost() {
	if os.Getenv("TESTCONTAINERS_HOST_OVERRIDE") != "" {
		return
	}
	if h := os.Getenv("DOCKER_HOST"); h == "" || strings.HasPrefix(h, "unix://") {
		os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "localhost")
	}
}

// pickImage chooses the image: public, else local. It talks to Docker with a client of its own,
// not testcontainers': testcontainers reads its settings (the reaper's
// among them) once, on first use, and the fallback must change one first.
func pickImage(ctx context.Context, public, local string) (string, error) {
	if img := os.Getenv("WAITROOM_TEST_REDIS_IMAGE"); img != "" {
		return img, nil
	}
	cli, err := dockerClient(ctx)
	if err != nil {
		return "", err
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, public); err == nil {
		return public, nil
	}
	pullErr := pull(ctx, cli, public)
	if pullErr == nil {
		return public, nil
	}
	if _, err := cli.ImageInspect(ctx, local); err != nil {
		return "", fmt.Errorf("cannot pull %s (%v), and there is no %s: %s", public, pullErr, local, howTo)
	}
	// Where the redis image cannot be pulled, neither can testcontainers'
	// reaper. Without it each package removes its own containers (Main,
	// CleanupContainer), as under scripts/test.sh.
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	fmt.Fprintf(os.Stderr, "redistest: %s cannot be pulled; using %s\n", public, local)
	return local, nil
}

func pull(ctx context.Context, cli *client.Client, ref string) error {
	resp, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	return resp.Wait(ctx)
}

// dockerClient returns a client of a Docker daemon that answers.
func dockerClient(ctx context.Context) (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err == nil {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err = cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
			cli.Close()
		}
	}
	if err != nil {
		return nil, &dockerError{err}
	}
	return cli, nil
}

// dockerError says Docker itself is not usable (no daemon, no permission).
type dockerError struct{ err error }

func (e *dockerError) Error() string {
	return "docker is not usable (" + e.err.Error() + "); tests start Redis in containers unless REDIS_ADDR is set"
}

func (e *dockerError) Unwrap() error { return e.err }

// ContainerImage is the image for a test's own containers (NewContainer,
// NewClusterNode, a Sentinel topology). Such tests cannot share the
// REDIS_ADDR server, so where Docker is not usable and REDIS_ADDR says the
// run was meant to go without it, they skip; under scripts/test.sh (no
// REDIS_ADDR) they fail, so CI never skips them.
func ContainerImage(tb testing.TB) string {
	tb.Helper()
	img, err := Image()
	var de *dockerError
	if errors.As(err, &de) && os.Getenv("REDIS_ADDR") != "" {
		tb.Skipf("needs Docker: it stops, pauses or clusters a Redis of its own, which the REDIS_ADDR one cannot be; %v", err)
	}
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	return img
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
		img, err := Image()
		if err != nil {
			shared.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.ctr, shared.err = runContainer(ctx, nil, img, true)
		if shared.err != nil {
			shared.err = fmt.Errorf("start redis (image %s): %w", img, shared.err)
			return
		}
		shared.addr, shared.err = endpoint(ctx, shared.ctr)
	})
	if shared.err != nil {
		tb.Fatalf("redistest: %v", shared.err)
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
	img := ContainerImage(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr, err := runContainer(ctx, tb, img, false)
	if err != nil {
		tb.Fatalf("redistest: start redis (image %s): %v", img, err)
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
	// The kernel may fail to freeze the container's processes at once
	// ("unable to freeze", seen on a loaded machine): Docker leaves it
	// running, and a later try succeeds. Bounded by ctx and 20 tries.
	for try := 1; ; try++ {
		_, err = cli.ContainerPause(ctx, c.ctr.GetContainerID(), client.ContainerPauseOptions{})
		if err == nil || !strings.Contains(err.Error(), "unable to freeze") || try == 20 {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
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
	img := ContainerImage(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ctr, err := runContainer(ctx, tb, img, true, testcontainers.WithCmd(
		"redis-server", "--cluster-enabled", "yes", "--protected-mode", "no", "--save", "", "--appendonly", "no"))
	if err != nil {
		tb.Fatalf("redistest: start redis cluster node (image %s): %v", img, err)
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

// bindAttempts bounds the starts of a container whose host port was
// taken between the moment it was found free and Docker's bind.
const bindAttempts = 3

// runContainer starts a Redis container, publishing its port 6379 on a
// host port found free just before when pin is set (or on the one Docker
// picks when not: a container that is stopped and started again must be
// free to get another), and removes it when the test ends.
//
// Left to itself Docker takes the next port of its own range, which is
// the kernel's range of ephemeral ports too: a port that another test's
// listener (an httptest server, a browser's) may hold, and Docker then
// fails with "bind: address already in use". A port taken
// all the same (in the short time between the check and the bind, or
// Docker's pick) is met with another try.
func runContainer(ctx context.Context, tb testing.TB, img string, pin bool, opts ...testcontainers.ContainerCustomizer) (*tcredis.RedisContainer, error) {
	var err error
	for range bindAttempts {
		all := opts
		if pin {
			var port string
			if port, err = freePort(); err != nil {
				return nil, err
			}
			all = append(opts[:len(opts):len(opts)], testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{network.MustParsePort(redisPort): {{HostPort: port}}}
			}))
		}
		var ctr *tcredis.RedisContainer
		ctr, err = tcredis.Run(ctx, img, all...)
		if tb != nil {
			testcontainers.CleanupContainer(tb, ctr)
		}
		if err == nil || !portTaken(err) {
			return ctr, err
		}
		if tb == nil && ctr != nil {
			_ = testcontainers.TerminateContainer(ctr) // the shared one: Main removes only the last
		}
	}
	return nil, err
}

// redisPort is the port Redis listens on inside its container.
const redisPort = "6379/tcp"

// freePort is a TCP port no socket of this host listens on now, on
// every address, as Docker publishes it.
func freePort() (string, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	return port, err
}

// portTaken reports whether Docker could not publish a port because
// something else holds it.
func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "address already in use") || strings.Contains(msg, "port is already allocated")
}
