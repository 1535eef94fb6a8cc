package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// tickWhenDue calls Tick until one applies, the way the scheduler does
// (not forcing it: the tick judges how late it is), and returns it.
func tickWhenDue(t *testing.T, s *Store, q string) TickResult {
	t.Helper()
	var res TickResult
	wait.For(t, 10*time.Second, "a tick to apply", func() (bool, string) {
		var err error
		if res, err = s.Tick(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		return res.Applied, fmt.Sprintf("not applied, the next due in %v", res.UntilNext)
	})
	return res
}

// outageLine is a line whose head is "holder", held aside unheard (it
// joined far back), then "polled", heard from ("first", between
// them, is admitted): interval 200 ms,
// abandon_after 1 s, one admitted a tick.
func outageLine(t *testing.T) (*Store, string, *redis.Client) {
	t.Helper()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: 200 * time.Millisecond, SessionTTL: time.Hour, AbandonAfter: time.Second})
	tick(t, s, rdb, q)
	enter(t, s, q, "in") // the bucket's
	farBack(t, s, q, 30, []string{"holder", "first", "polled"})
	status(t, s, q, "first")
	status(t, s, q, "polled")
	tickWhenDue(t, s, q) // holds "holder", admits "first": "polled" is next
	if n := heldCount(t, rdb, q); n != 1 {
		t.Fatalf("%d held, want the holder", n)
	}
	return s, q, rdb
}

// Time when no tick could run (Redis away, every replica down) does not
// count against a held place's deadline nor a heard place's abandonment
// window: the first tick after an outage longer than both drops nobody,
// and both holders, asking when they can, are admitted.
func TestOutageDoesNotCountAgainstPlaces(t *testing.T) {
	t.Parallel()
	s, q, rdb := outageLine(t)
	status(t, s, q, "polled")
	time.Sleep(2500 * time.Millisecond) // nobody ticks: the outage, past both deadlines
	// Every replica was down: the first tick after it is a fresh one's.
	s, err := NewStore(rdb, []string{q}, s.defaults, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res := tickWhenDue(t, s, q); res.Abandoned != 0 {
		t.Fatalf("the first tick after the outage dropped %d places", res.Abandoned)
	}
	if n := heldCount(t, rdb, q); n != 2 {
		t.Fatalf("%d held after the outage, want the holder and the unheard one set aside", n)
	}
	for _, u := range []string{"holder", "polled"} {
		if st := status(t, s, q, u); st.Status != Waiting {
			t.Fatalf("%s after the outage: %+v, want back in line", u, st)
		}
	}
	for _, u := range []string{"holder", "polled"} {
		if res := tickWhenDue(t, s, q); res.Moved != 1 || res.Abandoned != 0 {
			t.Fatalf("tick: %+v, want %s admitted", res, u)
		}
		if st := status(t, s, q, u); st.Status != Entered {
			t.Fatalf("%s: %+v, want admitted", u, st)
		}
	}
}

// With no outage, a held place that stays silent is still dropped once
// its deadline passes, and so is a place unheard for abandon_after when
// it reaches the head, behind people who poll (and are admitted).
func TestSilentPlaceDroppedWithoutOutage(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: 200 * time.Millisecond, SessionTTL: time.Hour, AbandonAfter: time.Second})
	tick(t, s, rdb, q)
	enter(t, s, q, "in") // the bucket's
	present := names("present", 8)
	farBack(t, s, q, 30, append(append([]string{"holder"}, present...), "silent"))
	status(t, s, q, "silent") // heard once, then never again
	dropped := int64(0)
	wait.For(t, 20*time.Second, "both silent places dropped", func() (bool, string) {
		for _, u := range present {
			status(t, s, q, u)
		}
		dropped += tickWhenDue(t, s, q).Abandoned
		return dropped >= 2, fmt.Sprintf("%d of 2 dropped", dropped)
	})
	for _, u := range []string{"holder", "silent"} {
		if st := status(t, s, q, u); st.Status != NotWaiting || st.Reason != ReasonAbandoned {
			t.Errorf("%s: %+v, want dropped as abandoned", u, st)
		}
	}
	for _, u := range present {
		if st := status(t, s, q, u); st.Status != Entered {
			t.Errorf("%s: %+v, want admitted", u, st)
		}
	}
}

// A late tick on a busy machine is not an outage: a replica whose tick
// calls all reached Redis, called late (its timer starved), still drops
// the places whose deadlines passed.
func TestLateTimerIsNoOutage(t *testing.T) {
	t.Parallel()
	s, q, rdb := outageLine(t)
	time.Sleep(2500 * time.Millisecond) // the timer starved: nobody ticks
	var dropped int64
	wait.For(t, 10*time.Second, "the silent holder dropped", func() (bool, string) {
		dropped += tickWhenDue(t, s, q).Abandoned
		return dropped > 0, fmt.Sprintf("%d dropped, %d held", dropped, heldCount(t, rdb, q))
	})
}
