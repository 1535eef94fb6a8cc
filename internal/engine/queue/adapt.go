package queue

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"time"
)

// The settings of the controller that lets the order page's health drive
// the rate (internal/ops/autorate): kept in the queue's config HASH
// beside the others, so settings.lua changes them with the rest, and read
// by common_config.lua's budget on every script that needs an interval's budget.

// Bounds of the controller's settings.
const (
	// MaxOriginTargetP95 bounds origin_target_p95_ms.
	MaxOriginTargetP95 = 10 * time.Minute
	// MaxProbeURLBytes bounds origin_probe_url.
	MaxProbeURLBytes = 2048
)

// adaptFieldNames are the config HASH's fields of the controller, in the
// order Adapt reads them, then the two values it steers.
var adaptFieldNames = []string{"adapt_enabled", "origin_target_p95_ms", "origin_max_error_rate", "min_refill_size",
	"origin_probe_url", "refill_size", "refill_effective"}

// Adapt reads queue's controller settings with the refill they steer,
// one HMGET: a field not stored yet is the replica's default.
func (s *Store) Adapt(ctx context.Context, queue string) (AdaptState, error) {
	q, err := s.queue(queue)
	if err != nil {
		return AdaptState{}, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
		return s.rdb.HMGet(ctx, q.keys.config, adaptFieldNames...).Result()
	})
	if err != nil {
		return AdaptState{}, fmt.Errorf("queue: adapt: %w", err)
	}
	d := s.defaults.Adapt
	st := AdaptState{Adapt: d, RefillSize: s.defaults.RefillSize}
	str := func(i int) (string, bool) {
		s, ok := v[i].(string)
		return s, ok
	}
	if x, ok := str(0); ok {
		st.Enabled = x == "1"
	}
	if x, ok := str(1); ok {
		n, _ := strconv.ParseInt(x, 10, 64)
		st.TargetP95 = time.Duration(n) * time.Millisecond
	}
	if x, ok := str(2); ok {
		st.MaxErrorRate, _ = strconv.ParseFloat(x, 64)
	}
	if x, ok := str(3); ok {
		st.MinRefill, _ = strconv.Atoi(x)
	}
	if x, ok := str(4); ok {
		st.ProbeURL = x
	}
	if x, ok := str(5); ok {
		st.RefillSize, _ = strconv.Atoi(x)
	}
	// The budget as common_config.lua's interval_budget works it out.
	st.RefillEffective = st.RefillSize
	if x, ok := str(6); ok && st.Enabled {
		if n, err := strconv.Atoi(x); err == nil {
			st.RefillEffective = max(max(1, min(st.MinRefill, st.RefillSize)), min(n, st.RefillSize))
		}
	}
	return st, nil
}

// CheckProbeURL reports whether s can be origin_probe_url: an absolute
// http or https URL with a host, at most MaxProbeURLBytes.
func CheckProbeURL(s string) error {
	u, err := url.Parse(s)
	if len(s) > MaxProbeURLBytes || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return fieldError("origin_probe_url", "must be an absolute http(s) URL without credentials, at most %d bytes", MaxProbeURLBytes)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
