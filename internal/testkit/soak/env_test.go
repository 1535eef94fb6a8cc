package soak

import "testing"

// The WAIT shortfall count comes from a replica's metrics page: the
// counter's line, not its HELP text or a metric whose name it begins.
func TestMetricValue(t *testing.T) {
	page := []byte(`# HELP waitroom_redis_wait_short_total Enters answered although fewer replicas than asked acknowledged them.
# TYPE waitroom_redis_wait_short_total counter
waitroom_redis_wait_short_total_other 9
waitroom_redis_wait_short_total 3
`)
	n, err := metricValue(page, "waitroom_redis_wait_short_total")
	if err != nil || n != 3 {
		t.Fatalf("got %d, %v; want 3", n, err)
	}
	if _, err := metricValue([]byte("other_total 1\n"), "waitroom_redis_wait_short_total"); err == nil {
		t.Fatal("a page without the counter gave no error")
	}
	if _, err := metricValue([]byte("waitroom_redis_wait_short_total x\n"), "waitroom_redis_wait_short_total"); err == nil {
		t.Fatal("a value that is no number gave no error")
	}
}
