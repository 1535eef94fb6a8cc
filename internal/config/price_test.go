package config

import (
	"testing"

	"github.com/waitroom/waitroom/internal/queue"
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
	if c.Defaults.Price != (queue.Price{Bits: 13, CalmArrivals: 100}) {
		t.Errorf("default price %+v", c.Defaults.Price)
	}
	c, err = Load(env(map[string]string{"WAITROOM_LIMIT_ENTER_PER_NETWORK": "0", "WAITROOM_LIMIT_ENTER_PER_SITE": "1,10",
		"WAITROOM_POW_NETWORK_BITS": "off", "WAITROOM_POW_CALM_ARRIVALS": "0"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.Defaults.Limits.EnterPerNetwork != (queue.Limit{}) || c.Defaults.Limits.EnterPerSite != (queue.Limit{Rate: 1, Burst: 10}) || c.Defaults.Price != (queue.Price{}) {
		t.Errorf("set: %+v, %+v", c.Defaults.Limits, c.Defaults.Price)
	}
	for k, v := range map[string]string{
		"WAITROOM_LIMIT_ENTER_PER_NETWORK": "5",
		"WAITROOM_LIMIT_ENTER_PER_SITE":    "-1,3",
		"WAITROOM_POW_NETWORK_BITS":        "33",
		"WAITROOM_POW_CALM_ARRIVALS":       "NaN",
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
