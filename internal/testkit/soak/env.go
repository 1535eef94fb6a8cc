package soak

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// proc is one child process: a redis-server, a Sentinel or a replica of
// the service. Its output goes to a log file in the run's directory.
type proc struct {
	name string
	path string
	args []string
	env  []string // nil: the soak's own environment
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start(dir string) error {
	log, err := os.OpenFile(filepath.Join(dir, p.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("soak: start %s: %w", p.name, err)
	}
	p.cmd, p.done = cmd, make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(p.done)
	}()
	return nil
}

// kill ends the process at once (SIGKILL) and waits for it.
func (p *proc) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused process dies too
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks the process to end (SIGTERM), and kills it if it has not
// within a few seconds.
func (p *proc) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.kill()
	}
}

func (p *proc) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// env is one phase's world on loopback: Redis (alone, or a primary, a
// replica and three Sentinels) and the service's replicas.
type env struct {
	dir       string
	cfg       Options
	sentinel  bool
	redis     []*proc // [0] the primary, [1] its replica (Sentinel set only)
	redisPort []int
	sentinels []*proc
	sentPort  []int
	replicas  []*proc
	urls      []string // each replica's base URL
	metrics   []string // each replica's metrics URL
}

// masterName is the Sentinel set's name for the primary.
const masterName = "soak"

// freePort returns a loopback port nobody listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for len(ports) < n {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		if !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// startEnv starts Redis and the replicas and waits until every replica
// is ready.
func startEnv(ctx context.Context, cfg Options, dir string, sentinel bool) (*env, error) {
	e := &env{dir: dir, cfg: cfg, sentinel: sentinel}
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	nRedis := 1
	if sentinel {
		nRedis = 2
	}
	// Redis, the Sentinels, then each replica's API and metrics.
	ports, err := freePorts(nRedis + 3 + 2*cfg.Replicas)
	if err != nil {
		return nil, err
	}
	e.redisPort = ports[:nRedis]
	for i := range nRedis {
		e.redis = append(e.redis, e.redisProc(i))
		if err := e.redis[i].start(dir); err != nil {
			return nil, err
		}
	}
	for i := range nRedis {
		if err := waitRedis(ctx, e.redisAddr(i)); err != nil {
			return nil, err
		}
	}
	if sentinel {
		e.sentPort = ports[nRedis : nRedis+3]
		for i, port := range e.sentPort {
			conf := filepath.Join(dir, fmt.Sprintf("sentinel%d.conf", i))
			text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
				"sentinel monitor %s 127.0.0.1 %d 2\n"+
				"sentinel down-after-milliseconds %s 1000\n"+
				"sentinel failover-timeout %s 10000\n", port, dir, masterName, e.redisPort[0], masterName, masterName)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				return nil, err
			}
			p := &proc{name: fmt.Sprintf("sentinel%d", i), path: cfg.RedisServer, args: []string{conf, "--sentinel"}}
			if err := p.start(dir); err != nil {
				return nil, err
			}
			e.sentinels = append(e.sentinels, p)
		}
		if err := e.waitReplicaKnown(ctx); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Replicas {
		port, metricsPort := ports[nRedis+3+2*i], ports[nRedis+3+2*i+1]
		e.urls = append(e.urls, fmt.Sprintf("http://127.0.0.1:%d", port))
		e.metrics = append(e.metrics, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
		e.replicas = append(e.replicas, &proc{name: fmt.Sprintf("waitroom%d", i), path: cfg.Bin, env: e.replicaEnv(port, metricsPort)})
	}
	for i := range e.replicas {
		if err := e.replicas[i].start(dir); err != nil {
			return nil, err
		}
	}
	for i := range e.replicas {
		if err := e.waitReady(ctx, i); err != nil {
			return nil, err
		}
	}
	ok = true
	return e, nil
}

// redisProc is Redis number i. AOF with appendfsync always: Redis writes
// and fsyncs each write before it answers, so a SIGKILL loses nothing
// that was acknowledged and "nobody lost" can promise every acknowledged
// place across a crash (everysec could lose up to a second of them). The
// files are in the run's temporary directory.
func (e *env) redisProc(i int) *proc {
	args := []string{
		"--port", strconv.Itoa(e.redisPort[i]), "--bind", "127.0.0.1",
		"--dir", e.dir, "--dbfilename", fmt.Sprintf("dump%d.rdb", i),
		"--appendonly", "yes", "--appendfsync", "always", "--appenddirname", fmt.Sprintf("aof%d", i),
		"--save", "",
	}
	if e.sentinel {
		// The fence: a primary with no replica in sync refuses writes
		// (NOREPLICAS, a 503). A promoted replica drops its link to the
		// old primary at once, so the old one stops taking writes then,
		// not when the Sentinels get round to demoting it. Both nodes
		// carry it, as either may be the primary.
		args = append(args, "--min-replicas-to-write", "1", "--min-replicas-max-lag", strconv.Itoa(fenceMaxLag))
		// The price of the fence is no writes until a replica is back in
		// sync; with one replica there is no other to wait for before
		// streaming it the data (Redis waits 5 s by default).
		args = append(args, "--repl-diskless-sync-delay", "0")
	}
	if i > 0 {
		args = append(args, "--replicaof", "127.0.0.1", strconv.Itoa(e.redisPort[0]))
	}
	return &proc{name: fmt.Sprintf("redis%d", i), path: e.cfg.RedisServer, args: args}
}

// fenceMaxLag is min-replicas-max-lag, in seconds: a replica acknowledges
// once a second, so 2 leaves room for a busy second without letting a
// cut-off replica count for long.
const fenceMaxLag = 2

func (e *env) redisAddr(i int) string { return fmt.Sprintf("127.0.0.1:%d", e.redisPort[i]) }

// redisURL is what the replicas connect with.
func (e *env) redisURL() string {
	if !e.sentinel {
		return "redis://" + e.redisAddr(0) + "/0"
	}
	u := "redis-sentinel://"
	for i, p := range e.sentPort {
		if i > 0 {
			u += ","
		}
		u += fmt.Sprintf("127.0.0.1:%d", p)
	}
	return u + "/0?master_name=" + masterName
}

// replicaEnv is one replica's whole environment (nothing inherited but
// PATH and HOME).
func (e *env) replicaEnv(port, metricsPort int) []string {
	c := e.cfg
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"WAITROOM_ADDR=127.0.0.1:" + strconv.Itoa(port),
		// A port of its own, for the enters answered short of the WAIT.
		"WAITROOM_METRICS_ADDR=127.0.0.1:" + strconv.Itoa(metricsPort),
		"WAITROOM_REDIS_URL=" + e.redisURL(),
		"WAITROOM_QUEUES=" + Queue,
		"WAITROOM_SECRET=" + c.secret,
		"WAITROOM_COOKIE_SECURE=false",
		"WAITROOM_TRUSTED_PROXIES=127.0.0.1/32",
		"WAITROOM_REFILL_SIZE=" + strconv.Itoa(c.RefillSize),
		"WAITROOM_REFILL_INTERVAL=" + c.RefillInterval.String(),
		"WAITROOM_REQUEST_TIMEOUT=" + c.RequestTimeout.String(),
		// Admissions outlive the run, and nobody is dropped for going
		// quiet while the service is down: "lost" means lost.
		"WAITROOM_SESSION_TTL=24h",
		"WAITROOM_ABANDON_AFTER=0",
		"WAITROOM_LOG_LEVEL=warn",
		// The simulated users share a few /24s (clientAddr) and solve no
		// proof of work: the price of a place would refuse
		// all but each network's first. The soak checks the line under
		// faults; the price has tests of its own (internal/engine/queue).
		"WAITROOM_POW_NETWORK_BITS=off",
	}
	if e.sentinel {
		// An acknowledged write is on the replica too, so a failover
		// keeps it.
		env = append(env, "WAITROOM_REDIS_WAIT_REPLICAS=1")
	}
	return env
}

// waitRedis polls until Redis at addr answers PING (it may be loading
// its AOF).
func waitRedis(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rdb.Close()
	return poll(ctx, 30*time.Second, func() error { return rdb.Ping(ctx).Err() })
}

// waitReady polls replica i's /readyz.
func (e *env) waitReady(ctx context.Context, i int) error {
	c := &http.Client{Timeout: 2 * time.Second}
	p := e.replicas[i]
	return poll(ctx, 30*time.Second, func() error {
		select {
		case <-p.done:
			// Exited: say why, from its log, instead of waiting on.
			log, _ := os.ReadFile(filepath.Join(e.dir, p.name+".log"))
			return errExited{fmt.Errorf("%s exited: %s", p.name, tail(log, 600))}
		default:
		}
		resp, err := c.Get(e.urls[i] + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("replica %d: /readyz %d", i, resp.StatusCode)
		}
		return nil
	})
}

// errExited is an error polling again cannot mend.
type errExited struct{ error }

// tail is the end of a log, at most n bytes.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(bytes.TrimSpace(b))
}

// poll runs f every 100 ms until it succeeds, for at most limit.
func poll(ctx context.Context, limit time.Duration, f func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := f()
		if err == nil {
			return nil
		}
		var exited errExited
		if errors.As(err, &exited) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("soak: gave up after %s: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// sentinelClient talks to Sentinel i.
func (e *env) sentinelClient(i int) *redis.SentinelClient {
	return redis.NewSentinelClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", e.sentPort[i]), MaxRetries: -1})
}

// waitReplicaKnown waits until every Sentinel sees the primary and its
// replica, so a failover has somewhere to go.
func (e *env) waitReplicaKnown(ctx context.Context) error {
	for i := range e.sentPort {
		sc := e.sentinelClient(i)
		err := poll(ctx, 60*time.Second, func() error {
			reps, err := sc.Replicas(ctx, masterName).Result()
			if err != nil {
				return err
			}
			for _, r := range reps {
				if r["flags"] == "slave" && r["master-link-status"] == "ok" {
					return nil
				}
			}
			return errors.New("no replica known yet")
		})
		sc.Close()
		if err != nil {
			return fmt.Errorf("sentinel %d: %w", i, err)
		}
	}
	return nil
}

// primaryAddr is where the data is now: the only Redis, or the primary
// the Sentinels name.
func (e *env) primaryAddr(ctx context.Context) (string, error) {
	if !e.sentinel {
		return e.redisAddr(0), nil
	}
	sc := e.sentinelClient(0)
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(ctx, masterName).Result()
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(a[0], a[1]), nil
}

// close stops everything: the replicas first, so none logs a lost Redis.
func (e *env) close() {
	for _, p := range e.replicas {
		p.stop()
	}
	for _, p := range e.sentinels {
		p.stop()
	}
	for _, p := range e.redis {
		p.stop()
	}
}

// waitShort sums the replicas' count of enters answered although the
// replica had not acknowledged them in time (waitroom_redis_wait_short_total):
// the places a failover at that moment could lose. A replica restarted in
// the phase counts from its restart.
func (e *env) waitShort(ctx context.Context) (int, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	total := 0
	for _, u := range e.metrics {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		n, err := metricValue(body, "waitroom_redis_wait_short_total")
		if err != nil {
			return 0, fmt.Errorf("%s: %w", u, err)
		}
		total += n
	}
	return total, nil
}

// metricValue reads one unlabelled counter from a Prometheus text page.
func metricValue(page []byte, name string) (int, error) {
	for _, line := range strings.Split(string(page), "\n") {
		v, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %q is not a number", name, v)
		}
		return int(f), nil
	}
	return 0, fmt.Errorf("no %s on the page", name)
}
