package demo

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Capacity makes next an order page that serves at most n orders at once,
// each taking service: one more waits for a free slot (in arrival order,
// as a server's worker pool makes them), so past n concurrent orders the
// latency grows with the backlog, and if more arrive than n / service a
// second, without bound. The demo's order page gets it from
// WAITROOM_DEMO_CAPACITY, for measuring how the order page's health
// drives the rate (docs/PERFORMANCE.md). A request whose client
// leaves while it waits gives its place up.
func Capacity(next http.Handler, n int, service time.Duration) http.Handler {
	slots := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case slots <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-slots }()
		t := time.NewTimer(service)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
		next.ServeHTTP(w, r)
	})
}

// CapacityFromEnv reads the order page's capacity (WAITROOM_DEMO_CAPACITY,
// at least least) and each order's time (WAITROOM_DEMO_ORDER_TIME) from
// the two raw values, an empty one taking its default.
func CapacityFromEnv(capacity, orderTime string, defCapacity int, defOrderTime time.Duration, least int) (int, time.Duration, error) {
	n, t := defCapacity, defOrderTime
	if capacity != "" {
		v, err := strconv.Atoi(capacity)
		if err != nil || v < least {
			return 0, 0, fmt.Errorf("WAITROOM_DEMO_CAPACITY: want an integer ≥ %d, got %q", least, capacity)
		}
		n = v
	}
	if orderTime != "" {
		v, err := time.ParseDuration(orderTime)
		if err != nil || v < 0 {
			return 0, 0, fmt.Errorf("WAITROOM_DEMO_ORDER_TIME: want a duration, got %q", orderTime)
		}
		t = v
	}
	return n, t, nil
}
