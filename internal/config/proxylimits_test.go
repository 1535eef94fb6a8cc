package config

import (
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
)

// TestGateLimits: the proxy's limits have safe
// defaults, are read from the environment, and refused out of bounds.
func TestGateLimits(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.GateLimits != proxy.DefaultLimits() {
		t.Fatalf("defaults %+v, want %+v", c.GateLimits, proxy.DefaultLimits())
	}
	c, err = Load(env(map[string]string{"WAITROOM_GATE_BODY_TIMEOUT": "3s", "WAITROOM_GATE_BODY_MIN_RATE": "4096",
		"WAITROOM_GATE_MAX_PER_PASS": "16", "WAITROOM_GATE_MAX_PER_CLIENT": "100"}))
	if err != nil {
		t.Fatal(err)
	}
	if want := (proxy.Limits{BodyGrace: 3 * time.Second, BodyMinRate: 4096, PerPass: 16, PerClient: 100}); c.GateLimits != want {
		t.Fatalf("limits %+v, want %+v", c.GateLimits, want)
	}
	for k, v := range map[string]string{"WAITROOM_GATE_BODY_TIMEOUT": "0s", "WAITROOM_GATE_BODY_MIN_RATE": "0",
		"WAITROOM_GATE_MAX_PER_PASS": "0", "WAITROOM_GATE_MAX_PER_CLIENT": "lots"} {
		if _, err := Load(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming it", k, v, err)
		}
	}
}

// TestProbeURLAtLoad: WAITROOM_ORIGIN_PROBE_URL to
// cloud metadata, loopback or a private address stops start-up with
// invalid_probe_url, unless WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE allows
// the last two.
func TestProbeURLAtLoad(t *testing.T) {
	for _, u := range []string{"http://169.254.169.254/", "http://2852039166/", "http://[::ffff:169.254.169.254]/", "http://127.0.0.1:8081/", "http://10.0.0.1/"} {
		_, err := Load(env(map[string]string{"WAITROOM_ORIGIN_PROBE_URL": u}))
		if err == nil || !strings.Contains(err.Error(), "invalid_probe_url") {
			t.Errorf("%s: %v, want invalid_probe_url", u, err)
		}
	}
	c, err := Load(env(map[string]string{"WAITROOM_ORIGIN_PROBE_URL": "http://127.0.0.1:8081/", "WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE": "true"}))
	if err != nil || c.ProbePolicy != (safeurl.Policy{AllowLoopback: true, AllowPrivate: true}) {
		t.Fatalf("allowed: %+v %v", c.ProbePolicy, err)
	}
	if _, err := Load(env(map[string]string{"WAITROOM_ORIGIN_PROBE_URL": "http://169.254.169.254/", "WAITROOM_ORIGIN_PROBE_ALLOW_PRIVATE": "true"})); err == nil {
		t.Fatal("link-local allowed")
	}
}
