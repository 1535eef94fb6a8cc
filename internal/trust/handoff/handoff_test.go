package handoff

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var hour = queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}

// env is one test's queues (of its own) on the shared Redis: the store,
// the tracker and the service of one replica.
type env struct {
	rdb     *redis.Client
	store   *queue.Store
	tracker *Tracker
	svc     *Service
	queues  []string
}

func newEnv(t testing.TB, n int) *env {
	t.Helper()
	rdb := redistest.Client(t)
	var queues []string
	for i := range n {
		name := fmt.Sprintf("h%d-%d-%s", time.Now().UnixNano(), i, strings.NewReplacer("/", "-", " ", "_").Replace(t.Name()))
		queues = append(queues, name[:min(len(name), 64)])
	}
	tr := NewTracker(rdb, queues)
	store, err := queue.NewStore(rdb, queues, hour, 5*time.Second, queue.WithRecentMoves(tr))
	if err != nil {
		t.Fatal(err)
	}
	return &env{rdb: rdb, store: store, tracker: tr, svc: New(rdb, store, tr, 5*time.Second), queues: queues}
}

// line enters users in order; the first is admitted (one token), the
// others wait. It returns each user's arrival number.
func (e *env) line(t testing.TB, q string, users ...string) map[string]int64 {
	t.Helper()
	seqs := map[string]int64{}
	for _, u := range users {
		tk, err := e.store.Enter(context.Background(), q, queue.Entry{Caller: queue.Caller{User: u}})
		if err != nil {
			t.Fatal(err)
		}
		seqs[u] = tk.Seq
	}
	return seqs
}

func holder(u string, gen int64) queue.Caller {
	return queue.Caller{User: u, Proved: true, Credential: true, Gen: gen}
}

// The whole move: same member, same position, the older credential
// refused by status, enter and leave, the newer one working, and the
// hand-over used up (token and code alike).
func TestMoveKeepsThePlaceAndRevokesTheOldCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b", "c", "d")
	before, err := e.store.Status(ctx, q, holder("c", 0))
	if err != nil || before.Status != queue.Waiting || before.Position != 2 {
		t.Fatalf("before: %+v, %v", before, err)
	}
	h, err := e.svc.Create(ctx, q, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Token) != 43 || len(h.Code) != CodeLen || time.Until(h.Expires) > TTL+time.Second {
		t.Fatalf("hand-over %+v", h)
	}
	m, tk, err := e.svc.Enter(ctx, q, h.Token, "198.51.100.1", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if m.Member != "c" || m.Gen != 1 || tk.Status != queue.Waiting || tk.Position != 2 {
		t.Fatalf("moved %+v, ticket %+v", m, tk)
	}
	// The older credential: every call that could change anything.
	if _, err := e.store.Status(ctx, q, holder("c", 0)); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("status with the old credential: %v", err)
	}
	if _, err := e.store.Enter(ctx, q, queue.Entry{Caller: holder("c", 0)}); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("enter with the old credential: %v", err)
	}
	if err := e.store.Leave(ctx, q, queue.Caller{User: "c", Credential: true, Gen: 0}); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("leave with the old credential: %v", err)
	}
	// ...changed nothing: the place is where it was, for the new holder.
	after, err := e.store.Status(ctx, q, holder("c", 1))
	if err != nil || after.Status != queue.Waiting || after.Position != 2 {
		t.Fatalf("after: %+v, %v", after, err)
	}
	// Used once: the token and its code.
	for _, in := range []string{h.Token, h.Code, FormatCode(strings.ToLower(h.Code))} {
		if _, _, err := e.svc.Enter(ctx, q, in, "198.51.100.2", "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("reuse of %q: %v", in, err)
		}
	}
	// Other users are untouched.
	if tk, err := e.store.Status(ctx, q, holder("d", 0)); err != nil || tk.Position != 3 {
		t.Errorf("d: %+v, %v", tk, err)
	}
	// Moving again goes on from the new generation; the first new
	// credential is then stale too.
	h2, err := e.svc.Create(ctx, q, "c", 1)
	if err != nil {
		t.Fatal(err)
	}
	if m, _, err := e.svc.Enter(ctx, q, FormatCode(h2.Code), "198.51.100.3", "", 0); err != nil || m.Gen != 2 {
		t.Fatalf("second move %+v, %v", m, err)
	}
	if _, err := e.store.Status(ctx, q, holder("c", 1)); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("status with the first new credential: %v", err)
	}
	if _, err := e.svc.Create(ctx, q, "c", 1); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("create with a stale credential: %v", err)
	}
	// Leaving with the current one works.
	if err := e.store.Leave(ctx, q, queue.Caller{User: "c", Credential: true, Gen: 2}); err != nil {
		t.Fatal(err)
	}
}

// Only a place in line moves: not an admission, not a place that ended.
func TestOnlyAWaitingPlaceMoves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b")
	if _, err := e.svc.Create(ctx, q, "a", 0); !errors.Is(err, ErrNotWaiting) {
		t.Errorf("admitted: %v", err)
	}
	if _, err := e.svc.Create(ctx, q, "nobody", 0); !errors.Is(err, ErrNotWaiting) {
		t.Errorf("no place: %v", err)
	}
	// A hand-over whose place left before it is used is invalid.
	h, err := e.svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.Leave(ctx, q, queue.Caller{User: "b", Credential: true, Gen: 0}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Enter(ctx, q, h.Token, "", "", 0); !errors.Is(err, ErrInvalid) {
		t.Errorf("place gone: %v", err)
	}
}

// A new hand-over replaces the member's last one.
func TestNewHandoffReplacesTheLast(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b")
	first, err := e.svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{first.Token, first.Code} {
		if _, _, err := e.svc.Enter(ctx, q, in, "", "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("the replaced hand-over's %q: %v", in, err)
		}
	}
	if err := e.svc.Check(ctx, q, "b", first.Token); !errors.Is(err, ErrInvalid) {
		t.Errorf("check of the replaced token: %v", err)
	}
	if err := e.svc.Check(ctx, q, "a", second.Token); !errors.Is(err, ErrInvalid) {
		t.Errorf("check by another member: %v", err)
	}
	if err := e.svc.Check(ctx, q, "b", second.Token); err != nil {
		t.Errorf("check of the live token: %v", err)
	}
	if _, _, err := e.svc.Enter(ctx, q, second.Code, "", "", 0); err != nil {
		t.Fatal(err)
	}
}

// N devices race to use one hand-over: exactly one gets the place.
func TestOneTimeUnderConcurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b")
	for round, byCode := range []bool{false, true} {
		h, err := e.svc.Create(ctx, q, "b", int64(round))
		if err != nil {
			t.Fatal(err)
		}
		in := h.Token
		if byCode {
			in = h.Code
		}
		const n = 64
		var wins, invalid atomic.Int64
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _, err := e.svc.Enter(ctx, q, in, "", "", 0) // no client: no per-client limit
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, ErrInvalid):
					invalid.Add(1)
				default:
					t.Errorf("caller %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 || invalid.Load() != n-1 {
			t.Fatalf("by code %v: %d won, %d invalid", byCode, wins.Load(), invalid.Load())
		}
	}
}

// An expired hand-over is as unknown (its expiry is set in the past in
// Redis rather than waited for).
func TestExpired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b")
	h, err := e.svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	k := keysFor(q)
	for _, f := range []string{tokenField(h.Token), codeField(h.Code)} {
		if err := e.rdb.HSet(ctx, k.live, f, "b\n0\n1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.rdb.ZAdd(ctx, k.expires, redis.Z{Score: 1, Member: "b"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Check(ctx, q, "b", h.Token); !errors.Is(err, ErrInvalid) {
		t.Errorf("check: %v", err)
	}
	for _, in := range []string{h.Token, h.Code} {
		if _, _, err := e.svc.Enter(ctx, q, in, "", "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("expired %q: %v", in, err)
		}
	}
	// The next call swept it: nothing of it is left.
	if _, err := e.svc.Create(ctx, q, "a", 0); !errors.Is(err, ErrNotWaiting) {
		t.Fatal(err)
	}
	if n, err := e.rdb.HLen(ctx, k.live).Result(); err != nil || n != 0 {
		t.Errorf("live hand-overs left: %d, %v", n, err)
	}
	if tk, err := e.store.Status(ctx, q, holder("b", 0)); err != nil || tk.Status != queue.Waiting {
		t.Errorf("b still holds the place: %+v, %v", tk, err)
	}
}

// A hand-over of one queue is unknown in another.
func TestOtherQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2)
	q1, q2 := e.queues[0], e.queues[1]
	ctx := context.Background()
	e.line(t, q1, "a", "b")
	e.line(t, q2, "a", "b")
	h, err := e.svc.Create(ctx, q1, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{h.Token, h.Code} {
		if _, _, err := e.svc.Enter(ctx, q2, in, "", "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q in the other queue: %v", in, err)
		}
	}
	if err := e.svc.Check(ctx, q2, "b", h.Token); !errors.Is(err, ErrInvalid) {
		t.Errorf("check in the other queue: %v", err)
	}
	if _, _, err := e.svc.Enter(ctx, "nope", h.Token, "", "", 0); !errors.Is(err, queue.ErrUnknownQueue) {
		t.Errorf("unknown queue: %v", err)
	}
	// Still good where it belongs.
	if _, _, err := e.svc.Enter(ctx, q1, h.Token, "", "", 0); err != nil {
		t.Fatal(err)
	}
}

// Guessing codes: ClientAttempts failures from one client, then every
// attempt from it is refused unread, the right code too; QueueAttempts
// failures by code in the queue, then every code; a token still works.
func TestGuessLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b", "c")
	h, err := e.svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	wrong := func() string {
		for {
			if c := newCode(); c != h.Code {
				return c
			}
		}
	}
	const guesser = "203.0.113.7"
	for i := range ClientAttempts {
		if _, _, err := e.svc.Enter(ctx, q, wrong(), guesser, "", 0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	var retry *queue.Retry
	if _, _, err := e.svc.Enter(ctx, q, h.Code, guesser, "", 0); !errors.As(err, &retry) || !errors.Is(err, queue.ErrRateLimited) ||
		retry.After <= 0 || retry.After > ClientWindow {
		t.Fatalf("the right code after %d wrong ones: %v", ClientAttempts, err)
	}
	// The queue's limit, from many clients (ClientAttempts of them above).
	for i := ClientAttempts; i < QueueAttempts; i++ {
		if _, _, err := e.svc.Enter(ctx, q, wrong(), fmt.Sprintf("client-%d", i), "", 0); !errors.Is(err, ErrInvalid) {
			t.Fatalf("guess %d: %v", i, err)
		}
	}
	if _, _, err := e.svc.Enter(ctx, q, h.Code, "someone-else", "", 0); !errors.Is(err, queue.ErrRateLimited) {
		t.Fatalf("the right code after %d wrong ones in the queue: %v", QueueAttempts, err)
	}
	// Malformed input is no attempt, and the token still works.
	if _, _, err := e.svc.Enter(ctx, q, "0OIL1", "someone-else", "", 0); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Enter(ctx, q, h.Token, "someone-else", "", 0); err != nil {
		t.Fatalf("token under the queue's code limit: %v", err)
	}
}

// The far-back path (the replica's snapshot, no Redis) never answers the
// older credential of a moved place: on the replica that moved it at
// once, on another after its next read of the moves, and on one whose
// view is too old, never.
func TestFarBackPathRefusesTheOldCredential(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	users := make([]string, 400)
	for i := range users {
		users[i] = fmt.Sprintf("u%03d", i)
	}
	seqs := e.line(t, q, users...)
	// Another replica: its own store and tracker on the same Redis.
	otherMoves := NewTracker(e.rdb, e.queues)
	other, err := queue.NewStore(e.rdb, e.queues, hour, 5*time.Second, queue.WithRecentMoves(otherMoves))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*queue.Store{e.store, other} {
		if err := s.RefreshSnapshot(ctx, q, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, tr := range []*Tracker{e.tracker, otherMoves} {
		if err := tr.Refresh(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	far := "u300"
	old := holder(far, 0)
	old.Seq = seqs[far]
	// Far back, before the move: answered from the snapshot.
	for _, s := range []*queue.Store{e.store, other} {
		if tk, err := s.Status(ctx, q, old); err != nil || !tk.Estimated {
			t.Fatalf("before the move: %+v, %v", tk, err)
		}
	}
	h, err := e.svc.Create(ctx, q, far, 0)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := e.svc.Enter(ctx, q, h.Token, "", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The replica that moved it knows at once.
	if _, err := e.store.Status(ctx, q, old); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("this replica: %v", err)
	}
	// The other, once it has read the moves (as Run does each Every).
	if err := otherMoves.Refresh(ctx, q); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Status(ctx, q, old); !errors.Is(err, queue.ErrMoved) {
		t.Errorf("the other replica: %v", err)
	}
	// The new credential is answered (from Redis while the move is recent).
	fresh := holder(far, m.Gen)
	fresh.Seq = m.Seq
	if tk, err := other.Status(ctx, q, fresh); err != nil || tk.Status != queue.Waiting || tk.Position != 300 {
		t.Errorf("the new credential: %+v, %v", tk, err)
	}
	// Others far back are still answered from the snapshot.
	unmoved := holder("u200", 0)
	unmoved.Seq = seqs["u200"]
	if tk, err := other.Status(ctx, q, unmoved); err != nil || !tk.Estimated {
		t.Errorf("an unmoved place: %+v, %v", tk, err)
	}
	// A view too old to tell sends everyone to Redis.
	stale := NewTracker(e.rdb, e.queues)
	stale.maxAge = 0
	if err := stale.Refresh(ctx, q); err != nil {
		t.Fatal(err)
	}
	if !stale.Recent(q, "u200") {
		t.Error("a stale view answered that a place did not move")
	}
	if !NewTracker(e.rdb, e.queues).Recent(q, "u200") {
		t.Error("a view never read answered that a place did not move")
	}
}

// Whatever a caller types or links, Enter answers with one of its
// documented errors and never panics; only the live token or code wins.
func FuzzEnterInput(f *testing.F) {
	e := newEnv(f, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(f, q, "a", "b")
	gen := int64(0)
	h, err := e.svc.Create(ctx, q, "b", gen)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", h.Token, h.Code, "abcd-efgh", strings.Repeat("A", 43), "ABCD EFGH", "\x00", "ÀBCDEFGH", "c:" + h.Code, "t:x", strings.Repeat("-", 1000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		live := in == h.Token
		if c, ok := NormalizeCode(in); ok && c == h.Code {
			live = true
		}
		m, _, err := e.svc.Enter(ctx, q, in, "", "", 0)
		switch {
		case err == nil:
			if !live || m.Member != "b" {
				t.Fatalf("%q won %+v", in, m)
			}
			gen = m.Gen
			if h, err = e.svc.Create(ctx, q, "b", gen); err != nil {
				t.Fatal(err)
			}
		case live && !errors.Is(err, queue.ErrRateLimited):
			t.Fatalf("the live hand-over %q: %v", in, err)
		case !errors.Is(err, ErrInvalid) && !errors.Is(err, queue.ErrRateLimited):
			t.Fatalf("%q: %v", in, err)
		}
	})
}

// A code is read one way: what NormalizeCode accepts is CodeLen symbols
// of Alphabet, and reads the same again when shown (FormatCode).
func FuzzNormalizeCode(f *testing.F) {
	for _, s := range []string{"ABCD-EFGH", "abcd efgh", "23456789", "ABCDEFG", "ABCDEFGHJ", "0OIL1ABC", "ａbcdefgh", "ABCD--EFGH "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, ok := NormalizeCode(s)
		if !ok {
			return
		}
		if len(c) != CodeLen || strings.Trim(c, Alphabet) != "" {
			t.Fatalf("%q read as %q", s, c)
		}
		if again, ok := NormalizeCode(FormatCode(c)); !ok || again != c {
			t.Fatalf("%q shown as %q reads %q", c, FormatCode(c), again)
		}
	})
}

// Codes use every symbol of the alphabet and nothing else.
func TestNewCodeAlphabet(t *testing.T) {
	if len(Alphabet) != 32 {
		t.Fatalf("alphabet of %d symbols", len(Alphabet))
	}
	seen := map[rune]bool{}
	for range 2000 {
		c := newCode()
		if _, ok := NormalizeCode(c); !ok {
			t.Fatalf("new code %q does not read", c)
		}
		for _, r := range c {
			seen[r] = true
		}
	}
	if len(seen) != 32 {
		t.Errorf("2000 codes used %d symbols", len(seen))
	}
}
