package queue

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// enteredScore returns user's score in the entered set (start or last renewal).
func enteredScore(t *testing.T, rdb *redis.Client, q, user string) int64 {
	t.Helper()
	v, err := rdb.ZScore(context.Background(), keysFor(q).entered, user).Result()
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	return int64(v)
}

// backdate makes user's admission look as if it began at start and was
// last renewed at basis (Redis clock, ms), as time passing would.
func backdate(t *testing.T, rdb *redis.Client, q, user string, start, basis int64) {
	t.Helper()
	ctx := context.Background()
	k := keysFor(q)
	if err := rdb.ZAddXX(ctx, k.entered, redis.Z{Score: float64(basis), Member: user}).Err(); err != nil {
		t.Fatal(err)
	}
	if start != basis {
		if err := rdb.HSet(ctx, k.admitted, user, start).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func redisNow(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

func current(t *testing.T, s *Store, q, user string, start time.Time) bool {
	t.Helper()
	ok, err := s.Current(context.Background(), q, user, start)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// With sliding sessions a pass check renews the admission it names for
// the session TTL from then, never beyond SessionMax after it began; the
// admission keeps its start (what the pass names) through renewals, done
// and status, and one not renewed expires as before.
func TestSlidingSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl, max = time.Hour, 2 * time.Hour
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: ttl, SessionMax: max})
	k := keysFor(q)

	a := enter(t, s, q, "a")
	start := a.AdmittedAt
	if a.Status != Entered || !a.AdmissionEnds().Equal(start.Add(max)) {
		t.Fatalf("enter: %+v; want Entered, ending at the latest SessionMax after it began", a)
	}
	// A check renews: the score moves to now, the start is kept apart.
	began := start.Add(-30 * time.Minute) // as if it began 30 min ago
	backdate(t, rdb, q, "a", began.UnixMilli(), began.UnixMilli())
	before := redisNow(t, rdb)
	if !current(t, s, q, "a", began) {
		t.Fatal("a current admission's check failed")
	}
	if got := enteredScore(t, rdb, q, "a"); got < before {
		t.Fatalf("not renewed: score %d, check at %d", got, before)
	}
	if got, _ := rdb.HGet(ctx, k.admitted, "a").Int64(); got != began.UnixMilli() {
		t.Fatalf("start kept %d, want %d", got, began.UnixMilli())
	}
	if st := status(t, s, q, "a"); st.Status != Entered || !st.AdmittedAt.Equal(began) {
		t.Fatalf("status after a renewal: %+v; want Entered since %v", st, began)
	}
	if i := info(t, s, q); i.Entered != 1 {
		t.Fatalf("active %d, want 1", i.Entered)
	}
	// A pass naming another admission of the same user neither opens nor
	// renews.
	score := enteredScore(t, rdb, q, "a")
	if current(t, s, q, "a", began.Add(time.Millisecond)) || enteredScore(t, rdb, q, "a") != score {
		t.Fatal("a stale pass was current, or renewed the admission")
	}

	// Never beyond SessionMax: an admission that began 1h50m ago, last
	// renewed 55 min ago, is renewed to end at its start + 2h, not now + 1h.
	now := redisNow(t, rdb)
	enter(t, s, q, "b")
	bStart := now - (110 * time.Minute).Milliseconds()
	backdate(t, rdb, q, "b", bStart, now-(55*time.Minute).Milliseconds())
	if !current(t, s, q, "b", time.UnixMilli(bStart)) {
		t.Fatal("b's check failed")
	}
	if got, want := enteredScore(t, rdb, q, "b"), bStart+(max-ttl).Milliseconds(); got != want {
		t.Fatalf("b renewed to %d, want start + max - ttl = %d", got, want)
	}
	// Past SessionMax (its last renewal over a TTL ago) it has ended: the
	// check fails, status says expired, the tick purges it with its start.
	backdate(t, rdb, q, "b", bStart-(15*time.Minute).Milliseconds(), now-ttl.Milliseconds()-1)
	if current(t, s, q, "b", time.UnixMilli(bStart-(15*time.Minute).Milliseconds())) {
		t.Fatal("an expired session's check succeeded")
	}
	if st := status(t, s, q, "b"); st.Status != NotWaiting {
		t.Fatalf("b after its end: %+v", st)
	}
	if res := tick(t, s, rdb, q); res.Purged != 1 {
		t.Fatalf("tick purged %d, want 1", res.Purged)
	}
	if st := status(t, s, q, "b"); st.Reason != ReasonExpired {
		t.Fatalf("b after the purge: %+v", st)
	}
	if ok, _ := rdb.HExists(ctx, k.admitted, "b").Result(); ok {
		t.Fatal("the purge left b's start behind")
	}

	// done ends a renewed admission by the start its pass names, not by
	// its score.
	if ok, err := s.Done(ctx, q, "a", time.UnixMilli(enteredScore(t, rdb, q, "a"))); err != nil || ok {
		t.Fatalf("done with the last renewal's time: %v, %v", ok, err)
	}
	if ok, err := s.Done(ctx, q, "a", began); err != nil || !ok {
		t.Fatalf("done: %v, %v", ok, err)
	}
	if n, _ := rdb.HLen(ctx, k.admitted).Result(); n != 0 {
		t.Fatalf("%d starts left after done", n)
	}

	// Entering again and leaving drop a renewed admission's start too.
	for _, end := range []func(user string){
		func(u string) { enter(t, s, q, u) },
		func(u string) {
			if err := s.Leave(ctx, q, Caller{User: u}); err != nil {
				t.Fatal(err)
			}
		},
	} {
		c := enter(t, s, q, "c")
		backdate(t, rdb, q, "c", c.AdmittedAt.UnixMilli()-1000, c.AdmittedAt.UnixMilli()-1000)
		if !current(t, s, q, "c", c.AdmittedAt.Add(-time.Second)) {
			t.Fatal("c's check failed")
		}
		end("c")
		if current(t, s, q, "c", c.AdmittedAt.Add(-time.Second)) {
			t.Fatal("the old admission's pass is still current")
		}
		if ok, _ := rdb.HExists(ctx, k.admitted, "c").Result(); ok {
			t.Fatal("c's start was left behind")
		}
		if err := s.Leave(ctx, q, Caller{User: "c"}); err != nil {
			t.Fatal(err)
		}
	}
}

// Without SessionMax a check renews nothing: the admission ends a session
// TTL after it began, as before.
func TestFixedSessionsDoNotSlide(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
	a := enter(t, s, q, "a")
	if !a.AdmissionEnds().Equal(a.AdmittedAt.Add(time.Hour)) {
		t.Fatalf("ends %v", a.AdmissionEnds())
	}
	time.Sleep(5 * time.Millisecond)
	if !current(t, s, q, "a", a.AdmittedAt) || current(t, s, q, "a", a.AdmittedAt.Add(-time.Millisecond)) {
		t.Fatal("Current disagrees with the admission")
	}
	if got := enteredScore(t, rdb, q, "a"); got != a.AdmittedAt.UnixMilli() {
		t.Fatalf("score %d moved from the start %d", got, a.AdmittedAt.UnixMilli())
	}
}
