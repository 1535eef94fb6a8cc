package config

import (
	"testing"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
)

// The enter limits per network and site and the price of a place (issue
// 26.2): safe defaults, "off" and 0 turn them off, bad values stop start-up.
func TestNetworkLimitsAndPrice(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Defaults.Limits
	if l.EnterPerNetwork != (queue.Limit{Rate: 20, Burst: 1200}) || l.EnterPerSite != (queue.Limit{Rate: 50, Burst: 3000}) {
		t.Errorf("defaults: per network %+v, per site %+v", l.EnterPerNetwork, l.EnterPerSite)
	}
	if c.Defaults.Price != (queue.Price{Bits: 13, CalmArrivals: 100, MaxBits: queue.DefaultMaxBits}) {
		t.Errorf("default price %+v", c.Defaults.Price)
	}
	c, err = Load(env(map[string]string{"WAITROOM_LIMIT_ENTER_PER_NETWORK": "0", "WAITROOM_LIMIT_ENTER_PER_SITE": "1,10",
		"WAITROOM_POW_NETWORK_BITS": "off", "WAITROOM_POW_CALM_ARRIVALS": "0", "WAITROOM_POW_MAX_BITS": "12"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Defaults.Limits.EnterPerNetwork != (queue.Limit{}) || c.Defaults.Limits.EnterPerSite != (queue.Limit{Rate: 1, Burst: 10}) || c.Defaults.Price != (queue.Price{MaxBits: 12}) {
		t.Errorf("set: %+v, %+v", c.Defaults.Limits, c.Defaults.Price)
	}
	for k, v := range map[string]string{
		"WAITROOM_LIMIT_ENTER_PER_NETWORK": "5",
		"WAITROOM_LIMIT_ENTER_PER_SITE":    "-1,3",
		"WAITROOM_POW_NETWORK_BITS":        "33",
		"WAITROOM_POW_CALM_ARRIVALS":       "NaN",
		"WAITROOM_POW_MAX_BITS":            "0",
		"WAITROOM_HUMAN_CHECK":             "captcha",
	} {
		if _, err := Load(env(map[string]string{k: v})); err == nil {
			t.Errorf("%s=%s accepted", k, v)
		}
	}
}

// WAITROOM_HELD_RETURN_PER_TICK: 2 by default, 0 for no limit, a bad
// value stops start-up.
func TestHeldReturnPerTick(t *testing.T) {
	for v, want := range map[string]int{"": 2, "0": 0, "5": 5} {
		m := map[string]string{}
		if v != "" {
			m["WAITROOM_HELD_RETURN_PER_TICK"] = v
		}
		c, err := Load(env(m))
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Defaults.Limits.HeldReturnPerTick; got != want {
			t.Errorf("%q: %d, want %d", v, got, want)
		}
	}
	for _, v := range []string{"-1", "two", "2.5"} {
		if _, err := Load(env(map[string]string{"WAITROOM_HELD_RETURN_PER_TICK": v})); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

// The human check's provider: off by default; a provider needs its site
// key and secret, and takes the hosts a token may name from the public
// URL and the allowed origins; the networks file is only named here.
func TestHumanCheckAndNetworks(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.HumanCheck.Provider != humancheck.Off || c.NetworksFile != "" {
		t.Fatalf("defaults: %+v %q %v", c.HumanCheck, c.NetworksFile, err)
	}
	if _, err := Load(env(map[string]string{"WAITROOM_HUMAN_CHECK": "turnstile"})); err == nil {
		t.Error("turnstile without a site key and secret accepted")
	}
	c, err = Load(env(map[string]string{"WAITROOM_HUMAN_CHECK": "turnstile", "WAITROOM_HUMAN_CHECK_SITEKEY": "site",
		"WAITROOM_HUMAN_CHECK_SECRET": "0123456789abcdef", "WAITROOM_PUBLIC_URL": "https://queue.example",
		"WAITROOM_CORS_ORIGINS": "https://shop.example", "WAITROOM_NETWORKS_FILE": "/etc/waitroom/networks.txt"}))
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HumanCheck; h.Provider != humancheck.Turnstile || len(h.Hosts) != 2 || h.Hosts[0] != "queue.example" || h.Hosts[1] != "shop.example" {
		t.Errorf("human check %+v", h)
	}
	if c.NetworksFile != "/etc/waitroom/networks.txt" {
		t.Errorf("networks file %q", c.NetworksFile)
	}
}
