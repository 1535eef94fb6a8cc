package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// A waiting user not heard from for abandon_after is dropped when the line
// reaches them, without spending a token: the next one goes in instead.
// One who keeps asking keeps the place.
func TestAbandonedPlacesAreSkipped(t *testing.T) {
	t.Parallel()
	const abandon = time.Second
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: abandon})
	tick(t, s, rdb, q)
	enter(t, s, q, "in1")
	enter(t, s, q, "in2")
	for _, u := range []string{"gone", "b", "c"} {
		enter(t, s, q, u)
	}
	// "gone" closed the page; b and c keep polling past abandon_after, and
	// poll once more just before the tick: only the time from those last
	// polls to the tick must stay under abandon_after, however slow the
	// machine is meanwhile.
	for end := time.Now().Add(abandon + 200*time.Millisecond); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		status(t, s, q, "b")
		status(t, s, q, "c")
	}
	status(t, s, q, "b")
	status(t, s, q, "c")
	res := tick(t, s, rdb, q)
	if res.Moved != 2 || res.Abandoned != 1 || res.Tokens != 0 || res.Waiting != 0 {
		t.Fatalf("tick %+v: want b and c moved, one place dropped, no token spent on it", res)
	}
	for u, want := range map[string]Status{"b": Entered, "c": Entered, "gone": NotWaiting} {
		if st := status(t, s, q, u); st.Status != want {
			t.Errorf("%s: %+v", u, st)
		}
	}
	if st := status(t, s, q, "gone"); st.Reason != ReasonAbandoned {
		t.Errorf("gone is told %q", st.Reason)
	}
	if i := info(t, s, q); i.AbandonedLastInterval != 1 || i.Settings.AbandonAfter != abandon {
		t.Errorf("info %+v", i)
	}
	tick(t, s, rdb, q)
	hist, err := NewInspector(s).History(context.Background(), q)
	if err != nil || hist[len(hist)-1].Abandoned != 1 || hist[len(hist)-1].Admitted != 2 {
		t.Fatalf("history %+v, %v", hist, err)
	}
	// Coming back: a new place at the back, like anyone entering.
	if tk := enter(t, s, q, "gone"); tk.Status == NotWaiting {
		t.Fatalf("re-enter after abandonment: %+v", tk)
	}
}

// Off (0), nobody is dropped however long they stay silent.
func TestAbandonOff(t *testing.T) {
	t.Parallel()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	tick(t, s, rdb, q)
	enter(t, s, q, "in")
	enter(t, s, q, "silent")
	off := time.Duration(0)
	if err := NewInspector(s).UpdateSettings(context.Background(), q, Update{AbandonAfter: &off}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if res := tick(t, s, rdb, q); res.Moved != 1 || res.Abandoned != 0 {
		t.Fatalf("tick %+v", res)
	}
}

// However many closed their page, a tick drops a bounded number of places,
// and the ticks after it carry on. The silent places entered far from the
// head, so they have no record: each is held aside, asked to confirm, when
// it reaches the head, and dropped abandon_after later. The present user
// behind them moves in with the first tick (before held places, only
// once every silent place had been dropped).
func TestAbandonedDropsAreBounded(t *testing.T) {
	t.Parallel()
	const silent = 2500
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, AbandonAfter: 100 * time.Millisecond})
	tick(t, s, rdb, q)
	enter(t, s, q, "in")
	users := make([]string, silent)
	for i := range users {
		users[i] = fmt.Sprintf("s%d", i)
	}
	runEnterCall(t, s, q, users...)
	enter(t, s, q, "present")
	time.Sleep(150 * time.Millisecond)
	status(t, s, q, "present")
	dropped, moved := int64(0), int64(0)
	wait.For(t, 30*time.Second, "every silent place dropped, a bounded number a tick", func() (bool, string) {
		if moved == 0 {
			status(t, s, q, "present") // still here, just before each tick
		}
		res := tick(t, s, rdb, q)
		if res.Abandoned > abandonBatch {
			t.Fatalf("one tick dropped %d places, bound %d", res.Abandoned, abandonBatch)
		}
		dropped += res.Abandoned
		moved += res.Moved
		return moved == 1 && res.Waiting == 0 && dropped == silent,
			fmt.Sprintf("%d of %d dropped, %d moved, %d waiting", dropped, silent, moved, res.Waiting)
	})
	if st := status(t, s, q, "present"); st.Status != Entered || dropped != silent {
		t.Fatalf("present: %+v after %d of %d dropped", st, dropped, silent)
	}
}

// A user who holds no place is told why, when the store knows: the latest
// reason wins.
func TestReasons(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: 300 * time.Millisecond})
	tick(t, s, rdb, q)
	d := enter(t, s, q, "done")
	enter(t, s, q, "left")
	enter(t, s, q, "removed")
	enter(t, s, q, "expires")
	if ok, err := s.Done(ctx, q, "done", d.AdmittedAt); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.Leave(ctx, q, Caller{User: "left"}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewInspector(s).Remove(ctx, q, "removed"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"done": ReasonDone, "left": ReasonLeft, "removed": ReasonRemoved, "never-came": ""}
	for u, r := range want {
		if st := status(t, s, q, u); st.Status != NotWaiting || st.Reason != r {
			t.Errorf("%s: %+v, want reason %q", u, st, r)
		}
	}
	// Expired: before the tick purges it, and after.
	wait.For(t, time.Minute, "the admission to expire", func() (bool, string) {
		st := status(t, s, q, "expires")
		return st.Status == NotWaiting, fmt.Sprint(st.Status)
	})
	if st := status(t, s, q, "expires"); st.Reason != ReasonExpired {
		t.Errorf("expired, not purged: %+v", st)
	}
	tick(t, s, rdb, q)
	if st := status(t, s, q, "expires"); st.Reason != ReasonExpired {
		t.Errorf("expired and purged: %+v", st)
	}
	// Entering again and leaving: the latest reason.
	enter(t, s, q, "done")
	if err := s.Leave(ctx, q, Caller{User: "done"}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, q, "done"); st.Reason != ReasonLeft {
		t.Errorf("done, back, and left: %+v", st)
	}
	// Leaving while holding nothing records nothing new.
	if _, err := NewInspector(s).Remove(ctx, q, "never-came"); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, q, "never-came"); st.Reason != "" {
		t.Errorf("never-came: %+v", st)
	}
}
