package httpapi

import (
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestMeasureAdminGuessing is a measurement, not a check: one client
// guessing the admin token, first as fast as 8 connections go for 5 s,
// then at 50 guesses a second for WAITROOM_MEASURE_ADMIN (e.g. 10m). It
// logs how many guesses were compared (401) and refused unjudged (429),
// per minute. Skipped unless WAITROOM_MEASURE_ADMIN is set:
//
//	WAITROOM_MEASURE_ADMIN=10m go test -run TestMeasureAdminGuessing -v -timeout 20m ./internal/web/httpapi
func TestMeasureAdminGuessing(t *testing.T) {
	span, err := time.ParseDuration(os.Getenv("WAITROOM_MEASURE_ADMIN"))
	if err != nil {
		t.Skip("set WAITROOM_MEASURE_ADMIN to a duration to measure")
	}
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, ClientIP: behindProxy(t)})
	client := testClient(t)
	var compared, refused, other atomic.Int64
	guess := func(c *http.Client) {
		req, _ := http.NewRequest("GET", e.srv.URL+"/admin/v1/queues", nil)
		req.Header.Set("X-Forwarded-For", client)
		req.Header.Set("Authorization", "Bearer wrong-guess")
		resp, err := c.Do(req)
		if err != nil {
			other.Add(1)
			return
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusUnauthorized:
			compared.Add(1)
		case http.StatusTooManyRequests:
			refused.Add(1)
		default:
			other.Add(1)
		}
	}
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}

	start := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 5*time.Second {
				guess(c)
			}
		}()
	}
	wg.Wait()
	burst := time.Since(start)
	n := compared.Load() + refused.Load()
	t.Logf("full speed, %s: %d answers (%.0f/s): %d compared (401), %d refused unjudged (429), %d other",
		burst.Round(time.Millisecond), n, float64(n)/burst.Seconds(), compared.Load(), refused.Load(), other.Load())

	start = time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	minute, lastCompared := 1, compared.Load()
	for now := range tick.C {
		if now.Sub(start) >= span {
			break
		}
		guess(c)
		if now.Sub(start) >= time.Duration(minute)*time.Minute {
			t.Logf("minute %2d: %d compared (total %d), %d refused so far", minute, compared.Load()-lastCompared, compared.Load(), refused.Load())
			minute++
			lastCompared = compared.Load()
		}
	}
	t.Logf("after %s at 50/s more: %d compared in all, %d refused, %d other", span, compared.Load(), refused.Load(), other.Load())
}
