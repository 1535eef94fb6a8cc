package lockout_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// client is an address of the test's own (a random /64 of the
// documentation range), so tests run in parallel on one Redis.
func client() netip.Addr {
	var b [16]byte
	b[0], b[1], b[2], b[3] = 0x20, 0x01, 0x0d, 0xb8
	for i := 4; i < 8; i++ {
		b[i] = byte(rand.IntN(256))
	}
	b[15] = 1
	return netip.AddrFrom16(b)
}

var (
	digests = lockout.NewDigester()
	right   = digests.Digest("the right token")
	wrong   = digests.Digest("a guess")
)

func newLockout(t *testing.T, rdb redis.Scripter, p lockout.Policy) *lockout.Lockout {
	t.Helper()
	l, err := lockout.New(rdb, p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func attempt(t *testing.T, l *lockout.Lockout, c netip.Addr, d []byte) lockout.Result {
	t.Helper()
	r, err := l.Attempt(context.Background(), c, d, right)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// untilUnlocked polls with the right digest (which neither counts nor
// unlocks) until the lock is over.
func untilUnlocked(t *testing.T, l *lockout.Lockout, c netip.Addr, within time.Duration) {
	t.Helper()
	wait.For(t, within, "the lock to end", func() (bool, string) {
		v := attempt(t, l, c, right).Verdict
		return v != lockout.Locked, fmt.Sprintf("verdict %d", v)
	})
}

// The lock comes at the MaxFailures-th failure, the secret is then not
// compared (the right one is refused too), and each lock doubles up to
// the bound.
func TestLockDoublesUpToTheBound(t *testing.T) {
	t.Parallel()
	p := lockout.Policy{MaxFailures: 3, Window: time.Minute, BaseLock: 300 * time.Millisecond, MaxLock: 1200 * time.Millisecond, Memory: time.Hour}
	l := newLockout(t, redistest.Client(t), p)
	c := client()
	for i, want := range []time.Duration{300, 600, 1200, 1200} {
		want *= time.Millisecond
		for n := 1; n < p.MaxFailures; n++ {
			if r := attempt(t, l, c, wrong); r.Verdict != lockout.Mismatch || r.RetryAfter != 0 {
				t.Fatalf("lock %d, failure %d: %+v, want a counted mismatch", i+1, n, r)
			}
		}
		if r := attempt(t, l, c, wrong); r.Verdict != lockout.Mismatch || r.RetryAfter != want {
			t.Fatalf("lock %d: the failure that locks gave %+v, want a lock of %s", i+1, r, want)
		}
		r := attempt(t, l, c, right)
		if r.Verdict != lockout.Locked || r.RetryAfter <= 0 || r.RetryAfter > want {
			t.Fatalf("lock %d: the right secret while locked gave %+v, want Locked with up to %s left", i+1, r, want)
		}
		untilUnlocked(t, l, c, want+5*time.Second)
	}
	if r := attempt(t, l, c, right); r.Verdict != lockout.Match {
		t.Fatalf("after the locks: %+v, want Match", r)
	}
}

// Failures in an earlier window do not add up with later ones, and a
// success clears nothing.
func TestWindow(t *testing.T) {
	t.Parallel()
	p := lockout.Policy{MaxFailures: 3, Window: 300 * time.Millisecond, BaseLock: time.Minute, MaxLock: time.Hour, Memory: time.Hour}
	rdb := redistest.Client(t)
	l := newLockout(t, rdb, p)
	c := client()
	attempt(t, l, c, wrong)
	attempt(t, l, c, wrong)
	// The key lives no longer than its window while the client was never
	// locked.
	if ttl := rdb.PTTL(context.Background(), lockout.Key(c)).Val(); ttl <= 0 || ttl > p.Window {
		t.Fatalf("PTTL of an unlocked client's state %s, want within the window %s", ttl, p.Window)
	}
	wait.For(t, 10*time.Second, "the state of a client never locked to expire with its window", func() (bool, string) {
		if rdb.Exists(context.Background(), lockout.Key(c)).Val() == 0 {
			return true, ""
		}
		return false, fmt.Sprintf("still there, PTTL %v", rdb.PTTL(context.Background(), lockout.Key(c)).Val())
	})
	attempt(t, l, c, wrong)
	attempt(t, l, c, right)
	if r := attempt(t, l, c, wrong); r.Verdict != lockout.Mismatch || r.RetryAfter != 0 {
		t.Fatalf("second failure of a new window: %+v, want no lock", r)
	}
	if r := attempt(t, l, c, wrong); r.RetryAfter != time.Minute {
		t.Fatalf("third failure of the window: %+v, want a lock (a success in between clears nothing)", r)
	}
	if ttl := rdb.PTTL(context.Background(), lockout.Key(c)).Val(); ttl < 59*time.Minute {
		t.Fatalf("PTTL of a locked client's state %s, want about Memory (1h)", ttl)
	}
}

// Many guesses at once, through two lockouts on one Redis (two replicas):
// exactly MaxFailures are compared, the rest are refused unjudged.
func TestParallelGuessesShareOneBudget(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	replicas := []*lockout.Lockout{newLockout(t, rdb, lockout.DefaultPolicy), newLockout(t, redistest.Client(t), lockout.DefaultPolicy)}
	c := client()
	const guesses = 200
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		counts = map[lockout.Verdict]int{}
	)
	for i := range guesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := replicas[i%2].Attempt(context.Background(), c, wrong, right)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[r.Verdict]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts[lockout.Mismatch] != lockout.DefaultPolicy.MaxFailures || counts[lockout.Locked] != guesses-lockout.DefaultPolicy.MaxFailures {
		t.Fatalf("verdicts %v, want exactly %d compared and the rest locked", counts, lockout.DefaultPolicy.MaxFailures)
	}
}

// Clients are locked one by one; an IPv6 client is its /64, and an
// IPv4-mapped address is the IPv4 one.
func TestClients(t *testing.T) {
	t.Parallel()
	l := newLockout(t, redistest.Client(t), lockout.Policy{MaxFailures: 1, Window: time.Minute, BaseLock: time.Minute, MaxLock: time.Minute, Memory: time.Minute})
	c := client()
	attempt(t, l, c, wrong)
	neighbour := c.As16()
	neighbour[15] = 0x99 // same /64
	if r := attempt(t, l, netip.AddrFrom16(neighbour), right); r.Verdict != lockout.Locked {
		t.Fatalf("another address of the locked /64: %+v, want Locked", r)
	}
	if r := attempt(t, l, client(), right); r.Verdict != lockout.Match {
		t.Fatalf("another client: %+v, want Match", r)
	}
	v4 := netip.AddrFrom4([4]byte{198, 18, byte(rand.IntN(256)), byte(rand.IntN(256))})
	attempt(t, l, v4, wrong)
	if r := attempt(t, l, netip.AddrFrom16(v4.As16()), right); r.Verdict != lockout.Locked {
		t.Fatalf("the IPv4-mapped form of a locked address: %+v, want Locked", r)
	}
	for _, tc := range []struct {
		addr netip.Addr
		key  string
	}{
		{netip.MustParseAddr("192.0.2.7"), "wr:lockout:192.0.2.7"},
		{netip.MustParseAddr("::ffff:192.0.2.7"), "wr:lockout:192.0.2.7"},
		{netip.MustParseAddr("2001:db8:1:2:3:4:5:6"), "wr:lockout:2001:db8:1:2::/64"},
		{netip.Addr{}, "wr:lockout:unknown"},
	} {
		if got := lockout.Key(tc.addr); got != tc.key {
			t.Errorf("Key(%v) = %q, want %q", tc.addr, got, tc.key)
		}
	}
}

// Without Redis an attempt is an error, within the caller's deadline: the
// caller refuses the request, it never lets a guess through unjudged.
func TestRedisDown(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	l := newLockout(t, rdb, lockout.DefaultPolicy)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r, err := l.Attempt(ctx, client(), right, right); err == nil {
		t.Fatalf("without Redis: %+v and no error", r)
	}
}

func TestInvalidPolicy(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	for _, p := range []lockout.Policy{
		{},
		{MaxFailures: 1, Window: time.Minute, BaseLock: time.Hour, MaxLock: time.Minute, Memory: time.Hour},
	} {
		if _, err := lockout.New(rdb, p); err == nil {
			t.Errorf("New accepted %+v", p)
		}
	}
	if _, err := lockout.New(nil, lockout.DefaultPolicy); err == nil {
		t.Error("New accepted no client")
	}
}

func TestDigester(t *testing.T) {
	t.Parallel()
	a, b := lockout.NewDigester(), lockout.NewDigester()
	if string(a.Digest("x")) != string(a.Digest("x")) || string(a.Digest("x")) == string(a.Digest("y")) {
		t.Fatal("a digester must be a function of the secret")
	}
	if string(a.Digest("x")) == string(b.Digest("x")) {
		t.Fatal("two digesters share a key")
	}
}
