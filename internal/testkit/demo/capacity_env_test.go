package demo

import (
	"testing"
	"time"
)

func TestCapacityFromEnv(t *testing.T) {
	for _, c := range []struct {
		capacity, orderTime string
		least               int
		n                   int
		d                   time.Duration
		bad                 bool
	}{
		{"", "", 1, 4, 400 * time.Millisecond, false},
		{"10", "1s", 1, 10, time.Second, false},
		{"0", "", 0, 0, 400 * time.Millisecond, false},
		{"0", "", 1, 0, 0, true},
		{"x", "", 0, 0, 0, true},
		{"", "-1s", 0, 0, 0, true},
		{"", "soon", 0, 0, 0, true},
	} {
		n, d, err := CapacityFromEnv(c.capacity, c.orderTime, 4, 400*time.Millisecond, c.least)
		if (err != nil) != c.bad || (!c.bad && (n != c.n || d != c.d)) {
			t.Errorf("%+v: %d, %v, %v", c, n, d, err)
		}
	}
}
