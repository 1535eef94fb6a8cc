package autorate

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// A queue's health report of its order page (the API's origin report),
// shared by every replica in Redis: what the
// site pushed (POST /admin/v1/queues/{queue}/origin) or the probe's
// holder measured, with the Redis clock's time.

// Sources of a report.
const (
	SourcePush  = "push"
	SourceProbe = "probe"
)

// MaxReportAge is how long a report steers the rate: a site that stops
// pushing (or a probe holder that stops) leaves the rate where it is.
const MaxReportAge = 15 * time.Second

// Bounds of a report.
const MaxReportP95 = 10 * time.Minute

// ErrInvalidReport is a report out of range: p95 0 to 10 minutes, error
// rate 0 to 1. Its text keeps the package's former name: API clients read
// it (httpapi's error mapper passes it on).
var ErrInvalidReport = errors.New("adapt: p95_ms must be 0 to 600000 and error_rate 0 to 1")

// Report is one origin report.
type Report struct {
	P95       time.Duration
	ErrorRate float64
}

// Validate checks r's ranges.
func (r Report) Validate() error {
	if r.P95 < 0 || r.P95 > MaxReportP95 || !(r.ErrorRate >= 0 && r.ErrorRate <= 1) || math.IsNaN(r.ErrorRate) {
		return ErrInvalidReport
	}
	return nil
}

//go:embed report.lua
var reportLua string

//go:embed lease.lua
var leaseLua string

var (
	reportScript = redis.NewScript(reportLua)
	leaseScript  = redis.NewScript(leaseLua)
)

// Redis is the part of a go-redis client the package uses.
type Redis interface {
	redis.Scripter
}

// store writes and reads the health reports and the probe lease.
type store struct {
	rdb     Redis
	timeout time.Duration
}

// write stores r as queue's report from source.
func (s store) write(ctx context.Context, q string, r Report, source string) error {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	err := reportScript.Run(ctx, s.rdb, []string{rediskeys.Origin(q)}, "write", r.P95.Milliseconds(),
		strconv.FormatFloat(r.ErrorRate, 'g', -1, 64), source).Err()
	if err != nil {
		return fmt.Errorf("autorate: write report: %w", err)
	}
	return nil
}

// read returns queue's report if one was written within MaxReportAge.
func (s store) read(ctx context.Context, q string) (Report, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	v, err := reportScript.Run(ctx, s.rdb, []string{rediskeys.Origin(q)}, "read").StringSlice()
	if err != nil || len(v) != 4 {
		return Report{}, false, fmt.Errorf("autorate: read report: %v %w", v, err)
	}
	at, _ := strconv.ParseInt(v[2], 10, 64)
	now, _ := strconv.ParseInt(v[3], 10, 64)
	if at == 0 || time.Duration(now-at)*time.Millisecond > MaxReportAge {
		return Report{}, false, nil
	}
	p95, _ := strconv.ParseInt(v[0], 10, 64)
	rate, _ := strconv.ParseFloat(v[1], 64)
	return Report{P95: time.Duration(p95) * time.Millisecond, ErrorRate: rate}, true, nil
}

// hold takes or renews queue's probe lease for token, for ttl; held is
// false when another replica holds it.
func (s store) hold(ctx context.Context, q, token string, ttl time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	n, err := leaseScript.Run(ctx, s.rdb, []string{rediskeys.OriginLease(q)}, token, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, fmt.Errorf("autorate: lease: %w", err)
	}
	return n == 1, nil
}
