package localmap

import "testing"

func TestEvict(t *testing.T) {
	// Expired entries go first, whatever the bound.
	m := map[int]int{1: 0, 2: 0, 3: 5, 4: 6}
	Evict(m, 10, func(v int) bool { return v == 0 })
	if len(m) != 2 || m[3] != 5 || m[4] != 6 {
		t.Fatalf("after the expired went: %v", m)
	}
	// Then arbitrary ones, down to fewer than below.
	m = map[int]int{}
	for i := range 100 {
		m[i] = i + 1
	}
	Evict(m, 91, func(int) bool { return false })
	if len(m) != 90 {
		t.Fatalf("%d entries left, want 90", len(m))
	}
	// Nothing goes when the map is already under the bound and nothing expired.
	Evict(m, 91, func(int) bool { return false })
	if len(m) != 90 {
		t.Fatalf("%d entries left after a second call, want 90", len(m))
	}
}
