package config

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/redisconn"
)

// env is a lookup for Load over kv.
func env(kv map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := kv[k]
		return v, ok
	}
}

// Every form of WAITROOM_REDIS_URL loads, with the service's bounded
// timeouts and no retries whatever the topology.
func TestRedisURLForms(t *testing.T) {
	for url, kind := range map[string]redisconn.Kind{
		"":                                    redisconn.Single, // the default, redis://localhost:6379/0
		"rediss://:pw@redis.example.com:6380": redisconn.Single,
		"redis-sentinel://s1:26379,s2:26379,s3:26379/0?master_name=mymaster": redisconn.Sentinel,
		"redis-cluster://n1:6379,n2:6379,n3:6379":                            redisconn.Cluster,
	} {
		c, err := Load(env(map[string]string{"WAITROOM_REDIS_URL": url}))
		if err != nil {
			t.Fatalf("%q: %v", url, err)
		}
		o, err := c.Redis()
		if err != nil {
			t.Fatal(err)
		}
		if k := redisconn.KindOf(o); k != kind {
			t.Errorf("%q: %s, want %s", url, k, kind)
		}
		if o.ReadTimeout != time.Second || o.DialTimeout != time.Second || !o.ContextTimeoutEnabled ||
			o.MaxRetries != -1 || o.MaxRedirects != -1 || o.DialerRetries != 1 {
			t.Errorf("%q: timeouts or retries %+v", url, o)
		}
	}
}

func TestRedisURLRefusedAtStart(t *testing.T) {
	for _, url := range []string{
		"redis-sentinel://:hunter2@s1:26379",    // no master_name
		"redis-cluster://:hunter2@n1:6379/2",    // db 2
		"http://:hunter2@localhost:6379",        // scheme
		"redis://:hunter2@localhost:6379?x=y",   // unknown parameter
		"redis://:hunter2@localhost:6379,other", // one node only
	} {
		_, err := Load(env(map[string]string{"WAITROOM_REDIS_URL": url}))
		if err == nil || !strings.Contains(err.Error(), "WAITROOM_REDIS_URL: ") {
			t.Errorf("%q: %v, want a WAITROOM_REDIS_URL error", url, err)
		} else if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: the error repeats the password: %v", url, err)
		}
	}
}

func TestRedisWait(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisWaitReplicas != 0 || c.RedisWaitTimeout != 100*time.Millisecond {
		t.Errorf("defaults: %d replicas, %s", c.RedisWaitReplicas, c.RedisWaitTimeout)
	}
	c, err = Load(env(map[string]string{"WAITROOM_REDIS_WAIT_REPLICAS": "1", "WAITROOM_REDIS_WAIT_TIMEOUT": "250ms"}))
	if err != nil || c.RedisWaitReplicas != 1 || c.RedisWaitTimeout != 250*time.Millisecond {
		t.Errorf("set: %d replicas, %s, %v", c.RedisWaitReplicas, c.RedisWaitTimeout, err)
	}
	for _, kv := range []map[string]string{
		{"WAITROOM_REDIS_WAIT_REPLICAS": "-1"},
		{"WAITROOM_REDIS_WAIT_REPLICAS": "17"},
		{"WAITROOM_REDIS_WAIT_REPLICAS": "one"},
		{"WAITROOM_REDIS_WAIT_TIMEOUT": "0s"},
		{"WAITROOM_REDIS_WAIT_TIMEOUT": "500us"}, // WAIT counts whole ms, and 0 would block for ever
		{"WAITROOM_REDIS_WAIT_TIMEOUT": "600ms"},
		{"WAITROOM_REDIS_WAIT_TIMEOUT": "100"},
		{"WAITROOM_REDIS_WAIT_REPLICAS": "1", "WAITROOM_REDIS_WAIT_TIMEOUT": "300ms", "WAITROOM_REQUEST_TIMEOUT": "300ms"},
		{"WAITROOM_REDIS_WAIT_REPLICAS": "1", "WAITROOM_REQUEST_TIMEOUT": "100ms"},
	} {
		if _, err := Load(env(kv)); err == nil || !strings.Contains(err.Error(), "WAITROOM_REDIS_WAIT_") {
			t.Errorf("%v: %v, want a WAITROOM_REDIS_WAIT_ error", kv, err)
		}
	}
	// Without a WAIT, its default timeout does not limit the request
	// timeout (100ms was valid before the WAIT existed).
	if _, err := Load(env(map[string]string{"WAITROOM_REQUEST_TIMEOUT": "100ms"})); err != nil {
		t.Errorf("WAITROOM_REQUEST_TIMEOUT=100ms without a WAIT: %v", err)
	}
}

// WAITROOM_METRICS_ADDR: unset is the default; set to "" or "off", no
// metrics (unlike other variables, where empty means the default).
func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, DefaultMetricsAddr},
		{map[string]string{"WAITROOM_METRICS_ADDR": ""}, ""},
		{map[string]string{"WAITROOM_METRICS_ADDR": " off "}, ""},
		{map[string]string{"WAITROOM_METRICS_ADDR": "127.0.0.1:9100"}, "127.0.0.1:9100"},
	} {
		c, err := Load(env(tc.env))
		if err != nil || c.MetricsAddr != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.env, c.MetricsAddr, err, tc.want)
		}
	}
}

// A short admin token is refused at start-up, without repeating it; unset
// still disables the admin API.
func TestAdminTokenLength(t *testing.T) {
	for _, tc := range []struct {
		token string
		ok    bool
	}{
		{"", true},
		{"s3cret-token", false},
		{strings.Repeat("t", MinAdminTokenBytes-1), false},
		{strings.Repeat("t", MinAdminTokenBytes), true},
		{strings.Repeat("é", MinAdminTokenBytes/2), true}, // bytes, not characters
	} {
		c, err := Load(env(map[string]string{"WAITROOM_ADMIN_TOKEN": tc.token}))
		if tc.ok {
			if err != nil || c.AdminToken != tc.token {
				t.Errorf("%d bytes: %v (token %q)", len(tc.token), err, c.AdminToken)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "WAITROOM_ADMIN_TOKEN: ") || !strings.Contains(err.Error(), "32 bytes") {
			t.Errorf("%d bytes: %v, want a WAITROOM_ADMIN_TOKEN error naming 32 bytes", len(tc.token), err)
		} else if strings.Contains(err.Error(), tc.token) {
			t.Errorf("the error repeats the token: %v", err)
		}
	}
}

// WAITROOM_GATE_ROUTES: checked at start-up against WAITROOM_QUEUES, with
// every bad entry named; without it, the gate queue guards the whole
// site as before, and with it only a WAITROOM_GATE_QUEUE set on purpose is
// the catch-all.
func TestGateRoutes(t *testing.T) {
	c, err := Load(env(map[string]string{"WAITROOM_QUEUES": "default,sale"}))
	if err != nil || c.GateQueue != "default" || len(c.GateRoutes) != 0 {
		t.Fatalf("unset: queue %q, routes %v, %v", c.GateQueue, c.GateRoutes, err)
	}
	c, err = Load(env(map[string]string{"WAITROOM_QUEUES": "default,sale,concert-a", "WAITROOM_GATE_ROUTES": "/sale/concert-a/=concert-a, /sale/=sale,SHOP.example/=default"}))
	if err != nil || c.GateQueue != "" || len(c.GateRoutes) != 3 || c.GateRoutes[2].Host != "shop.example" {
		t.Fatalf("routes: queue %q, routes %+v, %v", c.GateQueue, c.GateRoutes, err)
	}
	c, err = Load(env(map[string]string{"WAITROOM_QUEUES": "default,sale", "WAITROOM_GATE_ROUTES": "/sale/=sale", "WAITROOM_GATE_QUEUE": "default"}))
	if err != nil || c.GateQueue != "default" {
		t.Fatalf("routes and a catch-all: %q, %v", c.GateQueue, err)
	}
	if _, err := Load(env(map[string]string{"WAITROOM_QUEUES": "default,sale", "WAITROOM_GATE_ROUTES": "/=sale", "WAITROOM_GATE_QUEUE": "default"})); err == nil || !strings.Contains(err.Error(), "WAITROOM_GATE_QUEUE: ") {
		t.Errorf("two catch-alls: %v", err)
	}
	for routes, want := range map[string]string{
		"/sale/=nope":            `queue "nope" is not in WAITROOM_QUEUES`,
		"/sale/../x/=sale":       "clean path",
		"sale=sale":              "clean path",
		"shop.example:443/=sale": "without scheme or port",
		"/sale/=sale,/sale=sale": "cover the same paths",
		"/sale/":                 "[host]/path/prefix=queue",
	} {
		_, err := Load(env(map[string]string{"WAITROOM_QUEUES": "default,sale", "WAITROOM_GATE_ROUTES": routes}))
		if err == nil || !strings.Contains(err.Error(), "WAITROOM_GATE_ROUTES: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error saying %q", routes, err, want)
		}
	}
}

func TestGateBypassCIDRs(t *testing.T) {
	c, err := Load(env(map[string]string{"WAITROOM_GATE_BYPASS_CIDRS": " 192.0.2.0/24, 2001:db8::/32 ,203.0.113.9,"}))
	if err != nil || len(c.GateBypassCIDRs) != 3 {
		t.Fatalf("%v %v", c.GateBypassCIDRs, err)
	}
	for _, v := range []string{"192.0.2.0/33", "office", "192.0.2.1-192.0.2.9"} {
		if _, err := Load(env(map[string]string{"WAITROOM_GATE_BYPASS_CIDRS": v})); err == nil || !strings.Contains(err.Error(), "WAITROOM_GATE_BYPASS_CIDRS: ") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

// The webhook settings: a URL needs a secret of 32 bytes or more, and is
// https unless to a loopback host or with the loudly named switch; errors
// never repeat the secret.
func TestWebhook(t *testing.T) {
	secret := strings.Repeat("s", 32)
	for _, tc := range []struct {
		env  map[string]string
		want string // "" when it loads
	}{
		{map[string]string{}, ""},
		{map[string]string{"WAITROOM_WEBHOOK_SECRET": secret}, ""},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "https://hooks.example/w", "WAITROOM_WEBHOOK_SECRET": secret}, ""},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "http://127.0.0.1:9/w", "WAITROOM_WEBHOOK_SECRET": secret}, ""},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "http://hooks.example/w", "WAITROOM_WEBHOOK_SECRET": secret, "WAITROOM_WEBHOOK_INSECURE_HTTP": "true"}, ""},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "http://hooks.example/w", "WAITROOM_WEBHOOK_SECRET": secret}, "WAITROOM_WEBHOOK_URL: "},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "https://user:pw@hooks.example/w", "WAITROOM_WEBHOOK_SECRET": secret}, "WAITROOM_WEBHOOK_URL: "},
		{map[string]string{"WAITROOM_WEBHOOK_URL": "https://hooks.example/w"}, "WAITROOM_WEBHOOK_SECRET: required"},
		{map[string]string{"WAITROOM_WEBHOOK_SECRET": "short-secret"}, "WAITROOM_WEBHOOK_SECRET: must be at least 32 bytes"},
		{map[string]string{"WAITROOM_WEBHOOK_INSECURE_HTTP": "maybe"}, "WAITROOM_WEBHOOK_INSECURE_HTTP: "},
	} {
		c, err := Load(env(tc.env))
		if tc.want == "" {
			if err != nil || c.WebhookURL != tc.env["WAITROOM_WEBHOOK_URL"] || string(c.WebhookSecret) != tc.env["WAITROOM_WEBHOOK_SECRET"] {
				t.Errorf("%v: %v", tc.env, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
		} else if s := tc.env["WAITROOM_WEBHOOK_SECRET"]; s != "" && strings.Contains(err.Error(), s) {
			t.Errorf("the error repeats the secret: %v", err)
		}
	}
}

func TestAdaptDefaults(t *testing.T) {
	c, err := Load(env(map[string]string{"WAITROOM_ADAPT_ENABLED": "true", "WAITROOM_ORIGIN_TARGET_P95": "800ms",
		"WAITROOM_ORIGIN_MAX_ERROR_RATE": "0.05", "WAITROOM_MIN_REFILL_SIZE": "3", "WAITROOM_ORIGIN_PROBE_URL": "http://orders:8081/healthz"}))
	if err != nil {
		t.Fatal(err)
	}
	want := queue.Adapt{Enabled: true, TargetP95: 800 * time.Millisecond, MaxErrorRate: 0.05, MinRefill: 3, ProbeURL: "http://orders:8081/healthz"}
	if c.Defaults.Adapt != want {
		t.Fatalf("adapt defaults %+v, want %+v", c.Defaults.Adapt, want)
	}
	for k, v := range map[string]string{"WAITROOM_ORIGIN_MAX_ERROR_RATE": "1.5", "WAITROOM_ORIGIN_PROBE_URL": "/healthz",
		"WAITROOM_ORIGIN_TARGET_P95": "-1s", "WAITROOM_MIN_REFILL_SIZE": "x", "WAITROOM_ADAPT_ENABLED": "maybe"} {
		if _, err := Load(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}
