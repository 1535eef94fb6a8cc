package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/pass"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		serveAsChild() // bounds_test.go: this binary is the server
		return
	}
	os.Exit(redistest.Main(m))
}

// replica is one run() of the service, started from env on a free port.
type replica struct {
	base string
	stop func() error // ends run's context and returns what run returned
}

// freeAddr is a loopback address no one listens on (now).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// adminToken is the replicas' WAITROOM_ADMIN_TOKEN: config.MinAdminTokenBytes
// or more, or the service refuses to start.
const adminToken = "cmd-test-admin-token-0123456789abcdef"

func startReplica(t *testing.T, env map[string]string) *replica {
	t.Helper()
	return startReplicaLogging(t, env, io.Discard)
}

// startReplicaLogging is startReplica with the service's log written to
// logOut.
func startReplicaLogging(t *testing.T, env map[string]string, logOut io.Writer) *replica {
	t.Helper()
	addr := freeAddr(t)
	// No metrics unless env asks: replicas side by side would all try :9090.
	full := map[string]string{"WAITROOM_ADDR": addr, "WAITROOM_REDIS_URL": "redis://" + redistest.Addr(t) + "/0", "WAITROOM_METRICS_ADDR": ""}
	// Every call of these tests comes from loopback, one network: its
	// second place would cost proof of work, which only the
	// tests of the price ask for.
	full["WAITROOM_POW_NETWORK_BITS"] = "off"
	for k, v := range env {
		full[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, envconfig.Lookup(full), logOut) }()
	r := &replica{base: "http://" + addr}
	stopped := false
	r.stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			return fmt.Errorf("run did not return after its context ended")
		}
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("replica %s: %v", addr, err)
		}
	})
	wait.For(t, 20*time.Second, "the service to be ready", func() (bool, string) {
		resp, err := http.Get(r.base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return true, ""
			}
		}
		select {
		case err := <-done:
			t.Fatalf("run ended before it was ready: %v", err)
		default:
		}
		if err != nil {
			return false, err.Error()
		}
		return false, "/readyz " + resp.Status
	})
	return r
}

type ticket struct {
	UserID     string `json:"user_id"`
	Status     string `json:"status"`
	Position   int    `json:"position"`
	PlaceToken string `json:"place_token"`
	Pass       string `json:"pass"`
}

// call makes a request with an optional bearer token and decodes a 200
// answer into out; it returns the status code.
func (r *replica) call(t *testing.T, method, path, bearer string, out any) int {
	t.Helper()
	var body io.Reader
	if method == "POST" {
		body = strings.NewReader("{}")
	}
	req, err := http.NewRequest(method, r.base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if method == "POST" {
		req.Header.Set("Content-Type", "application/json") // as every client must (origin.JSONBody)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == 200 && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

// The whole service starts from its environment, with the production
// defaults (no plain user ids), serves, and stops cleanly when its context
// ends (SIGTERM in production).
func TestRunServesAndShutsDown(t *testing.T) {
	queue := fmt.Sprintf("run%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{
		"WAITROOM_QUEUES":          queue + ",other",
		"WAITROOM_REFILL_SIZE":     "1",
		"WAITROOM_REFILL_INTERVAL": "100ms",
		"WAITROOM_ADMIN_TOKEN":     adminToken,
	})
	api := "/api/v1/queues/" + queue
	// Two users, one token: the scheduler's ticks admit the second.
	var b ticket
	for range 2 {
		if code := r.call(t, "POST", api+"/enter", "", &b); code != 200 || b.PlaceToken == "" {
			t.Fatalf("enter: %d %+v", code, b)
		}
	}
	wait.For(t, 20*time.Second, "b to be admitted with a pass", func() (bool, string) {
		var st ticket
		if code := r.call(t, "GET", api+"/status", b.PlaceToken, &st); code != 200 {
			t.Fatalf("status: %d", code)
		}
		return st.Status == "ENTERED" && st.Pass != "", fmt.Sprintf("%+v", st)
	})
	if code := r.call(t, "GET", api+"/status?user_id="+b.UserID, "", nil); code != 400 {
		t.Fatalf("plain user id on a production config: %d, want 400", code)
	}
	// The admin API works as run() wires it: its lockout and audit log
	// need Redis.
	if code := r.call(t, "GET", "/admin/v1/queues/"+queue, adminToken, nil); code != 200 {
		t.Fatalf("admin with the token: %d", code)
	}
	if code := r.call(t, "GET", "/admin/v1/queues/"+queue+"/audit", adminToken, nil); code != 200 {
		t.Fatalf("audit log: %d", code)
	}
	if code := r.call(t, "GET", "/admin/v1/queues/"+queue, "wrong", nil); code != 401 {
		t.Fatalf("admin with a wrong token: %d", code)
	}
	if err := r.stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// Replicas sharing one Redis, with no secret or key configured, share the
// ones the first generated: each accepts the others' place credentials and
// entry passes. A replica with another secret or key file accepts neither.
func TestReplicasShareCredentialsAndPasses(t *testing.T) {
	// Generated secrets live in one global Redis hash: this test's Redis
	// is shared with the package's other tests, which is what replicas do.
	queue := fmt.Sprintf("share%d", time.Now().UnixNano())
	env := map[string]string{"WAITROOM_QUEUES": queue, "WAITROOM_REFILL_SIZE": "1", "WAITROOM_REFILL_INTERVAL": "1h"}
	a, b := startReplica(t, env), startReplica(t, env)
	api := "/api/v1/queues/" + queue

	var in, waiting ticket
	if a.call(t, "POST", api+"/enter", "", &in); in.Status != "ENTERED" || in.Pass == "" {
		t.Fatalf("first enter on a: %+v", in)
	}
	if b.call(t, "POST", api+"/enter", "", &waiting); waiting.Status != "WAITING" {
		t.Fatalf("second enter on b: %+v", waiting)
	}
	for _, tc := range []struct {
		r    *replica
		tk   ticket
		want string
	}{{b, in, "ENTERED"}, {a, waiting, "WAITING"}} {
		var st ticket
		if code := tc.r.call(t, "GET", api+"/status", tc.tk.PlaceToken, &st); code != 200 || st.UserID != tc.tk.UserID || st.Status != tc.want {
			t.Fatalf("status on the other replica: %d %+v, want %s for %s", code, st, tc.want, tc.tk.UserID)
		}
	}
	var v struct {
		Queue, Sub string
	}
	if code := b.call(t, "GET", "/api/v1/verify?queue="+queue, in.Pass, &v); code != 200 || v.Sub != in.UserID || v.Queue != queue {
		t.Fatalf("b verifying a's pass: %d %+v", code, v)
	}
	var jwksA, jwksB json.RawMessage
	a.call(t, "GET", "/.well-known/jwks.json", "", &jwksA)
	b.call(t, "GET", "/.well-known/jwks.json", "", &jwksB)
	if string(jwksA) != string(jwksB) || len(jwksA) < 50 {
		t.Fatalf("JWKS differ: %s vs %s", jwksA, jwksB)
	}

	// A replica configured with its own secret and key file.
	keyPEM, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "signing.pem")
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	own := map[string]string{"WAITROOM_SECRET": strings.Repeat("s", 32), "WAITROOM_SIGNING_KEY_FILE": keyFile}
	for k, v := range env {
		own[k] = v
	}
	c := startReplica(t, own)
	if code := c.call(t, "GET", api+"/status", in.PlaceToken, nil); code != 401 {
		t.Fatalf("a credential of the generated secret on a replica with its own: %d", code)
	}
	if code := c.call(t, "GET", "/api/v1/verify?queue="+queue, in.Pass, nil); code != 401 {
		t.Fatalf("a pass of the generated key on a replica with its own: %d", code)
	}
	var mine ticket
	c.call(t, "POST", api+"/enter", "", &mine)
	if code := c.call(t, "GET", api+"/status", mine.PlaceToken, nil); code != 200 {
		t.Fatalf("its own credential: %d", code)
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	notKey := filepath.Join(dir, "not-a-key.pem")
	if err := os.WriteFile(notKey, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, env := range []map[string]string{
		{"WAITROOM_REFILL_SIZE": "0"},
		{"WAITROOM_REFILL_SIZE": "ten"},
		{"WAITROOM_REFILL_INTERVAL": "10ms"},
		{"WAITROOM_REFILL_INTERVAL": "soon"},
		{"WAITROOM_SESSION_TTL": "-1m"},
		{"WAITROOM_SESSION_SLIDING": "yes"},
		{"WAITROOM_SESSION_SLIDING": "true", "WAITROOM_SESSION_MAX": "5m"}, // below the 10m TTL
		{"WAITROOM_SESSION_SLIDING": "true", "WAITROOM_SESSION_MAX": "long"},
		{"WAITROOM_LIMIT_ENTER_PER_CLIENT": "5"},
		{"WAITROOM_LIMIT_ENTER_PER_PLACE": "-1,5"},
		{"WAITROOM_LIMIT_STATUS_PER_CLIENT": "10,0"},
		{"WAITROOM_LIMIT_STATUS_PER_PLACE": "fast,10"},
		{"WAITROOM_CORS_ORIGINS": "shop.example"},
		{"WAITROOM_CORS_ORIGINS": "https://shop.example/path"},
		{"WAITROOM_TRUSTED_PROXIES": "10.0.0.0/33"},
		{"WAITROOM_QUEUES": "a,{b}"},
		{"WAITROOM_QUEUES": " , "},
		{"WAITROOM_REDIS_URL": "http://nope"},
		{"WAITROOM_TARGET_URL": "/relative"},
		{"WAITROOM_LOG_LEVEL": "loud"},
		{"WAITROOM_REQUEST_TIMEOUT": "0s"},
		{"WAITROOM_SECRET": "too-short"},
		{"WAITROOM_JOIN_SECRET": "too-short"},
		{"WAITROOM_ADMIN_TOKEN": "too-short"},
		{"WAITROOM_COOKIE_SECURE": "maybe"},
		{"WAITROOM_INSECURE_USER_IDS": "yes please"},
		{"WAITROOM_MAX_CONNS": "0"},
		{"WAITROOM_MAX_CONNS": "lots"},
		{"WAITROOM_MAX_CONNS": "1000001"},
		{"WAITROOM_MAX_HEADER_BYTES": "512"},
		{"WAITROOM_MAX_HEADER_BYTES": "2000000"},
		{"WAITROOM_MAX_HEADER_BYTES": "8k"},
		{"WAITROOM_IDLE_TIMEOUT": "0s"},
		{"WAITROOM_IDLE_TIMEOUT": "1h"},
		{"WAITROOM_IDLE_TIMEOUT": "soon"},
		{"WAITROOM_REDIS_URL": "redis://" + redistest.Addr(t) + "/0", "WAITROOM_SIGNING_KEY_FILE": filepath.Join(dir, "missing.pem")},
		{"WAITROOM_REDIS_URL": "redis://" + redistest.Addr(t) + "/0", "WAITROOM_SIGNING_KEY_FILE": notKey},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := run(ctx, envconfig.Lookup(env), io.Discard)
		timedOut := ctx.Err() != nil
		cancel()
		if err == nil || timedOut {
			t.Errorf("run with %v: %v (want a configuration error before the deadline)", env, err)
		}
	}
}

// Settings in the environment seed a new queue only; a replica started with
// other ones says, in one line, which it does not apply.
func TestSeedSaysWhenTheEnvironmentDiffers(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	q := fmt.Sprintf("seed%d", time.Now().UnixNano())
	first := queue.Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: 10 * time.Minute,
		Adapt: queue.Adapt{Enabled: true, TargetP95: 800 * time.Millisecond}}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	// The third start names another automatic-rate target; its switch left
	// unset (zero) says nothing, though true is stored.
	third := queue.Settings{RefillSize: 1, RefillInterval: 20 * time.Second, SessionTTL: 10 * time.Minute,
		Adapt: queue.Adapt{TargetP95: 500 * time.Millisecond}}
	for i, env := range []queue.Settings{first, first, third} {
		store, err := queue.NewStore(rdb, []string{q}, env, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		logs.Reset()
		if _, err := seed(context.Background(), store, log); err != nil {
			t.Fatal(err)
		}
		warned, want := strings.Contains(logs.String(), "differ"), i == 2
		if warned != want {
			t.Fatalf("start %d: warned %v, want %v: %s", i, warned, want, logs.String())
		}
		if want && (!strings.Contains(logs.String(), "refill_size=10 (env: 1)") || !strings.Contains(logs.String(), "refill_interval=5s (env: 20s)") ||
			!strings.Contains(logs.String(), "origin_target_p95=800ms (env: 500ms)") || strings.Contains(logs.String(), "adapt_enabled")) {
			t.Fatalf("the line does not name the settings: %s", logs.String())
		}
	}
}
