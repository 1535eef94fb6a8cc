package gate

import (
	"fmt"
	"testing"
	"time"
)

// A full store drops expired claims before live ones: a live link claimed
// before newer ones that have expired is still refused a second exchange.
func TestMemoryPassLinksDropExpiredFirst(t *testing.T) {
	const max = 10
	clock := &Clock{}
	m, err := newMemoryPassLinks(max, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	claim := func(id string, until time.Time) bool {
		t.Helper()
		first, err := m.Claim(t.Context(), "q", id, until)
		if err != nil {
			t.Fatal(err)
		}
		return first
	}
	live := clock.Now().Add(time.Hour)
	claim("old-0", live)
	claim("old-1", live)
	for i := range max - 2 {
		claim(fmt.Sprint("short-", i), clock.Now().Add(time.Minute))
	}
	clock.Step(2 * time.Minute) // the short ones expire; the old ones live
	if !claim("new", live) {
		t.Fatal("a new link was refused")
	}
	for _, id := range []string{"old-0", "old-1", "new"} {
		if claim(id, live) {
			t.Errorf("live link %s was exchanged a second time", id)
		}
	}
	if !claim("short-0", live) {
		t.Error("an expired claim still refused its link")
	}
}
