package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// A credential whose place was left, removed or replaced by a
// re-entry must not be answered WAITING (or better placed) from another
// replica's snapshot.

// twoReplicas returns two stores (two replicas) of one queue on one
// Redis, a line of n far-back places u0.. behind the bucket's refill and
// one applied tick, and each place's arrival number.
func twoReplicas(t *testing.T, n int) (a, b *Store, q string, rdb *redis.Client, seq map[string]int64) {
	t.Helper()
	// near_head: 10 a tick, 122 ticks (2 x abandon_after / interval + 2).
	settings := Settings{RefillSize: 10, RefillInterval: time.Second, SessionTTL: time.Hour, AbandonAfter: time.Minute}
	a, q, rdb = newStore(t, settings)
	b, err := NewStore(rdb, []string{q}, settings, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The first tick, then an hour to the next: while a tick is due, the
	// snapshot sends places near tickReach of the head to Redis.
	tick(t, a, rdb, q)
	if err := rdb.HSet(context.Background(), keysFor(q).tick, "next_at_ms", time.Now().Add(time.Hour).UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	enterMany(t, a, q, names("in", 10))
	seq = map[string]int64{}
	users := names("u", n)
	for i, tk := range enterMany(t, a, q, users) {
		seq[users[i]] = tk.Seq
	}
	refresh(t, a, q)
	refresh(t, b, q)
	return a, b, q, rdb, seq
}

func refresh(t *testing.T, s *Store, q string) {
	t.Helper()
	if err := s.RefreshSnapshot(context.Background(), q, true); err != nil {
		t.Fatal(err)
	}
}

// farStatus is a status with a credential's arrival number, as the API
// asks it.
func farStatus(t *testing.T, s *Store, q, user string, seq int64) Ticket {
	t.Helper()
	tk, err := s.Status(context.Background(), q, Caller{User: user, Proved: true, Seq: seq})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// A leave (the user's, with DELETE .../place) or a removal (the
// operator's) on one replica: the other answers the old credential
// NOT_WAITING with the reason after its next snapshot read, which its
// scheduler makes within a second (refreshing here as it does: every
// TickPeriod, reading when the snapshot is snapshotEvery old). The
// replica that took it answers so at once.
func TestDepartureSeenByEveryReplica(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, user, reason string
		depart             func(s *Store, q, user string) error
	}{
		{"leave", "u2500", ReasonLeft, func(s *Store, q, u string) error {
			return s.Leave(context.Background(), q, Caller{User: u, Credential: true, Gen: 0})
		}},
		{"removal", "u2600", ReasonRemoved, func(s *Store, q, u string) error {
			_, err := NewInspector(s).Remove(context.Background(), q, u)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, b, q, _, seq := twoReplicas(t, 3000)
			s := seq[tc.user]
			if got := farStatus(t, b, q, tc.user, s); !got.Estimated || got.Status != Waiting {
				t.Fatalf("before: %+v, want an estimate from the snapshot", got)
			}
			if err := tc.depart(a, q, tc.user); err != nil {
				t.Fatal(err)
			}
			if got := farStatus(t, a, q, tc.user, s); got.Status != NotWaiting || got.Reason != tc.reason {
				t.Errorf("the replica that took it: %+v", got)
			}
			// The other replica, its scheduler's way.
			left := time.Now()
			stop := make(chan struct{})
			defer close(stop)
			go func() {
				period := time.NewTicker(TickPeriod(time.Second))
				defer period.Stop()
				for {
					select {
					case <-stop:
						return
					case <-period.C:
						_ = b.RefreshSnapshot(context.Background(), q, false)
					}
				}
			}()
			// Judged by the snapshot reads, not by the clock: a read that
			// began after the departure (the second to end after it, as
			// one may have been under way) must show it. On a loaded
			// machine the reads themselves may come late.
			qs, err := b.queue(q)
			if err != nil {
				t.Fatal(err)
			}
			reads := map[time.Time]bool{}
			wait.For(t, time.Minute, "the other replica to answer "+tc.reason, func() (bool, string) {
				readsBefore := len(reads)
				got := farStatus(t, b, q, tc.user, s)
				if got.Status == NotWaiting && got.Reason == tc.reason {
					t.Logf("the other replica answered %s %s after %v", got.Status, got.Reason, time.Since(left))
					return true, ""
				}
				if got.Status == NotWaiting || readsBefore >= 2 {
					t.Fatalf("the other replica, %d snapshot reads and %v after: %+v", readsBefore, time.Since(left), got)
				}
				if sn := qs.snap.Load(); sn != nil && sn.read.After(left) {
					reads[sn.read] = true
				}
				return false, fmt.Sprintf("%+v after %d snapshot reads", got, len(reads))
			})
		})
	}
}

// A re-entry gives the place a new arrival number at the back: the older
// credential is answered for the newest place (by Redis), never at its
// old, better position; the newest is answered from the snapshot.
func TestReentryOldCredential(t *testing.T) {
	t.Parallel()
	a, b, q, _, seq := twoReplicas(t, 3000)
	const u = "u1500"
	old := seq[u]
	tk := runEnterCall(t, a, q, u, "u1501")[0] // a batch of two: the re-entry path
	if tk.Seq <= old {
		t.Fatalf("re-entered at %d after %d", tk.Seq, old)
	}
	refresh(t, a, q)
	refresh(t, b, q)
	exact := status(t, b, q, u)
	for _, s := range []*Store{a, b} {
		got := farStatus(t, s, q, u, old)
		if got.Status != Waiting || got.Position < exact.Position {
			t.Errorf("old credential at %d, the newest place is at %d: %+v", got.Position, exact.Position, got)
		}
		if newest := farStatus(t, s, q, u, tk.Seq); !newest.Estimated || newest.Status != Waiting {
			t.Errorf("newest credential: %+v, want an estimate", newest)
		}
	}
}

// Generated histories (fixed seed): users leave, are removed, re-enter,
// leave and come back, on either replica; after both read a snapshot,
// every credential ever issued to each user, asked on either replica, is
// answered as Redis answers the user (its newest place, or NOT_WAITING
// with its reason), but the newest credential of a waiting user, which
// may be answered WAITING from the snapshot.
func TestStaleCredentialsGenerated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b, q, _, seq := twoReplicas(t, 4000)
	rng := rand.New(rand.NewPCG(26, 3))
	issued := map[string][]int64{}
	for u, s := range seq {
		issued[u] = []int64{s}
	}
	stores := []*Store{a, b}
	for step := range 600 {
		u := fmt.Sprintf("u%d", 200+rng.IntN(3800))
		s := stores[rng.IntN(2)]
		var err error
		switch rng.IntN(4) {
		case 0:
			err = s.Leave(ctx, q, Caller{User: u})
		case 1:
			_, err = NewInspector(s).Remove(ctx, q, u)
		default:
			// Alone or with a newcomer: both paths of enter.lua.
			users := []string{u}
			if rng.IntN(2) == 0 {
				users = append(users, fmt.Sprintf("n%d", step))
			}
			tk := runEnterCall(t, s, q, users...)[0]
			issued[u] = append(issued[u], tk.Seq)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	refresh(t, a, q)
	refresh(t, b, q)
	checked := 0
	for u, seqs := range issued {
		if len(seqs) == 1 {
			continue
		}
		exact := status(t, a, q, u)
		for i, s := range seqs {
			for _, st := range stores {
				got := farStatus(t, st, q, u, s)
				newest := i == len(seqs)-1 && exact.Status == Waiting
				switch {
				case newest:
					if got.Status != Waiting {
						t.Errorf("%s, newest credential %d: %+v, exactly %+v", u, s, got, exact)
					}
				case got.Estimated || got.Status != exact.Status || got.Reason != exact.Reason || got.Position != exact.Position:
					t.Errorf("%s, credential %d of %v: %+v, exactly %+v", u, s, seqs, got, exact)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no stale credential checked")
	}
}

// Past the set's cap, nothing stale is forgotten: the replica answers no
// far-back status from the snapshot until the head has passed what it
// could not keep.
func TestStaleSetCap(t *testing.T) {
	st := newStaleSet()
	entries := make([]staleEntry, staleMax+1)
	for i := range entries {
		entries[i] = staleEntry{user: fmt.Sprintf("u%d", i), upTo: int64(1000 + i)}
	}
	st.apply(entries, time.Now(), 0)
	if !st.stale("nobody", 5_000_000, 200_000) {
		t.Error("an entry was not kept, yet a far-back answer was allowed")
	}
	st.apply(nil, time.Now(), int64(1000+staleMax+1))
	if st.stale("nobody", 5_000_000, 300_000) || st.n.Load() != 0 {
		t.Errorf("the head passed them all: %d left", st.n.Load())
	}
}
