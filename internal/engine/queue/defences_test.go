package queue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// refusedWith checks that err is the refusal want, carrying a wait in
// (0, max] when it is one that says when to come back.
func refusedWith(t *testing.T, err, want error, max time.Duration) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %v", err, want)
	}
	if want == ErrChallengeRequired {
		return
	}
	var r *Retry
	if !errors.As(err, &r) || r.After <= 0 || r.After > max {
		t.Fatalf("%v: want a wait in (0, %s]", err, max)
	}
}

// takeBurst makes calls (call(0), call(1), …) until one is refused and
// returns how many passed and the refusal. It fails the test unless the
// limiter let the burst through, and no more than the burst plus what
// refilled while the calls ran: what the limiter decided, bounded by the
// time it had, so that a machine slow enough for a token to come back
// mid-burst does not fail the test (the calls at a quiet moment: the
// burst exactly).
func takeBurst(t *testing.T, lim Limit, call func(i int) error) (int, error) {
	t.Helper()
	start := time.Now()
	for i := 0; ; i++ {
		err := call(i)
		refilled := int(math.Ceil(time.Since(start).Seconds() * lim.Rate))
		if err != nil && i < lim.Burst {
			t.Fatalf("call %d within the burst of %d: %v", i, lim.Burst, err)
		}
		if err != nil {
			return i, err
		}
		if i+1 > lim.Burst+refilled {
			t.Fatalf("%d calls let through in %v, burst %d at %g a second", i+1, time.Since(start), lim.Burst, lim.Rate)
		}
		if i == lim.Burst+1000 {
			t.Fatalf("never refused in %d calls (%v)", i+1, time.Since(start))
		}
	}
}

// A client over its enter limit is refused without a place; another
// client, and the same one once its bucket refills, are not.
func TestEnterRateLimitPerClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{EnterPerClient: Limit{Rate: 5, Burst: 3}}
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits})
	passed, err := takeBurst(t, limits.EnterPerClient, func(i int) error {
		_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("a%d", i), Client: "192.0.2.1"}})
		return err
	})
	refusedWith(t, err, ErrRateLimited, 200*time.Millisecond)
	refused := fmt.Sprintf("a%d", passed)
	if st := status(t, s, q, refused); st.Status != NotWaiting {
		t.Fatalf("a refused enter left a place: %+v", st)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "b0", Client: "192.0.2.2"}}); err != nil {
		t.Fatalf("another client: %v", err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "c0"}}); err != nil {
		t.Fatalf("no client (the service's own call): %v", err)
	}
	// A client that waits what it is told gets through. The replica's local
	// stage charges a quiet call to the shared bucket with the next hot
	// one (local.go), so the shared bucket can be full again later than the
	// local one, by as long as that took; a wait the local stage gave can
	// then be answered with one more, exact, wait from Redis, never a third.
	var r *Retry
	errors.As(err, &r)
	for try := 1; ; try++ {
		time.Sleep(r.After + 10*time.Millisecond)
		_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: refused, Client: "192.0.2.1"}})
		if err == nil {
			break
		}
		if try == 2 || !errors.As(err, &r) {
			t.Fatalf("try %d, after the wait it said: %v", try, err)
		}
		t.Logf("try %d, after the wait it said: %v", try, err)
	}
}

// Status per place: a page polling faster than the limit is told to wait,
// and its place, like everyone's, stays as it was.
func TestStatusRateLimitPerPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{StatusPerPlace: Limit{Rate: 1, Burst: 2}, StatusPerClient: Limit{Rate: 1000, Burst: 1000}}
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits})
	enter(t, s, q, "first") // takes the token
	w := enter(t, s, q, "w")
	me := Caller{User: "w", Client: "192.0.2.1", Proved: true}
	_, err := takeBurst(t, limits.StatusPerPlace, func(int) error {
		tk, err := s.Status(ctx, q, me)
		if err == nil && tk.Position != w.Position {
			t.Fatalf("within the limit: %+v", tk)
		}
		return err
	})
	refusedWith(t, err, ErrRateLimited, time.Second)
	// Another place behind the same address is not limited by it.
	enter(t, s, q, "x")
	if _, err := s.Status(ctx, q, Caller{User: "x", Client: "192.0.2.1", Proved: true}); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s, q, "w"); st.Status != Waiting || st.Position != w.Position {
		t.Fatalf("the limited user's place moved: %+v", st)
	}
}

// Replicas share one budget: many calls from one client racing through
// two stores get the burst, however they are batched, give or take what
// the local stage lets through quietly (local.go): a replica's first
// calls, up to a tenth of the burst, are charged to the shared bucket
// with its next hot call, so one less may pass (the charge does not fit
// the last unit), or, when calls race in one batch, that many more.
func TestRateLimitSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{EnterPerClient: Limit{Rate: 0.001, Burst: 10}} // one call back per 1000 s
	settings := Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits}
	replicas, q, _ := newReplicas(t, settings, 2)
	var ok, limited atomic.Int64
	var wg sync.WaitGroup
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := replicas[i%2].Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("u%d", i), Client: "198.51.100.7"}})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrRateLimited):
				limited.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := ok.Load(); n < 9 || n > 10+2 || n+limited.Load() != 60 {
		t.Fatalf("%d let through, %d limited; want 9 to 12 of 60", n, limited.Load())
	}
	if i := info(t, replicas[0], q); i.Waiting+i.Entered != ok.Load() {
		t.Fatalf("places made: %d waiting, %d entered", i.Waiting, i.Entered)
	}
}

// Fetching challenges is limited per client at its enter limit, in a
// bucket of its own: over it the client is refused as an enter would be,
// while another client, and a call without a client, are not; the
// client's enters are not spent.
func TestChallengeRateLimitPerClient(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{EnterPerClient: Limit{Rate: 5, Burst: 3}}
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits})
	_, err := takeBurst(t, limits.EnterPerClient, func(int) error {
		d, err := s.Challenge(ctx, q, Caller{Client: "192.0.2.1"})
		if err == nil && d != 0 {
			t.Fatalf("difficulty %d, want 0", d)
		}
		return err
	})
	refusedWith(t, err, ErrRateLimited, 200*time.Millisecond)
	twelve := 12
	setUpdate(t, s, q, Update{ChallengeDifficulty: &twelve})
	if d, err := s.Challenge(ctx, q, Caller{Client: "192.0.2.2"}); err != nil || d != 12 {
		t.Fatalf("another client: %d, %v; want difficulty 12", d, err)
	}
	for range 10 {
		if _, err := s.Challenge(ctx, q, Caller{Client: ""}); err != nil {
			t.Fatalf("no client (the service's own call): %v", err)
		}
	}
	// Its enters are counted apart (they need no proof here).
	setUpdate(t, s, q, Update{ChallengeDifficulty: new(int)})
	for i := range 3 {
		if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("a%d", i), Client: "192.0.2.1"}}); err != nil {
			t.Fatalf("enter %d after the challenges: %v", i, err)
		}
	}
	if _, err := s.Challenge(ctx, "not-a-queue", Caller{Client: "192.0.2.3"}); !errors.Is(err, ErrUnknownQueue) {
		t.Fatalf("unknown queue: %v", err)
	}
}

// Replicas share one challenge budget per client: calls alternating
// between two stores get the burst, give or take what the local stage
// lets through quietly (as TestRateLimitSharedAcrossReplicas).
func TestChallengeRateLimitSharedAcrossReplicas(t *testing.T) {
	t.Parallel()
	limits := Limits{EnterPerClient: Limit{Rate: 0.001, Burst: 10}} // one call back per 1000 s
	settings := Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits}
	replicas, q, _ := newReplicas(t, settings, 2)
	ok := 0
	for i := range 40 {
		_, err := replicas[i%2].Challenge(context.Background(), q, Caller{Client: "198.51.100.7"})
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrRateLimited):
			t.Fatal(err)
		}
	}
	if ok < 9 || ok > 12 {
		t.Fatalf("%d of 40 let through, want 9 to 12", ok)
	}
}

// Within one script call, limited calls are answered in their own slots
// and everyone else's answer stays right.
func TestRefusalsInOneCall(t *testing.T) {
	t.Parallel()
	limits := Limits{EnterPerClient: Limit{Rate: 0.001, Burst: 2}}
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits})
	// Straight to the script, as calls the local stage found hot (cost 1).
	calls := []Caller{
		{User: "a", Client: "c1", clientCost: 1}, {User: "b", Client: "c1", clientCost: 1}, {User: "c", Client: "c1", clientCost: 1},
		{User: "d", Client: "c2", clientCost: 1}, {User: "e", Client: "c1", clientCost: 1}, {User: "f"},
	}
	tickets, err := s.queues[q].enters.run(context.Background(), calls)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		status   Status
		position int64
		refused  bool
	}{{Entered, 0, false}, {Waiting, 1, false}, {"", 0, true}, {Waiting, 2, false}, {"", 0, true}, {Waiting, 3, false}}
	for i, w := range want {
		tk := tickets[i]
		if (tk.refused != nil) != w.refused || tk.Status != w.status || tk.Position != w.position {
			t.Errorf("call %d (%s): %+v, refused %v; want %+v", i, calls[i].User, tk, tk.refused, w)
		}
	}
}

func setUpdate(t *testing.T, s *Store, q string, u Update) {
	t.Helper()
	if err := NewInspector(s).UpdateSettings(context.Background(), q, u); err != nil {
		t.Fatal(err)
	}
}

// The line's cap refuses newcomers, never someone already in line, and
// lets newcomers in again once there is room; the draw before an opening
// is capped the same way.
func TestMaxWaiting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	three := 3
	setUpdate(t, s, q, Update{MaxWaiting: &three})
	if i := info(t, s, q); i.Settings.MaxWaiting != 3 {
		t.Fatalf("info %+v", i.Settings)
	}
	enter(t, s, q, "in") // the token
	for _, u := range []string{"w1", "w2", "w3"} {
		if tk := enter(t, s, q, u); tk.Status != Waiting {
			t.Fatalf("%s: %+v", u, tk)
		}
	}
	_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "late"}})
	refusedWith(t, err, ErrQueueFull, 2*time.Hour)
	if st := status(t, s, q, "late"); st.Status != NotWaiting {
		t.Fatalf("a refused newcomer got a place: %+v", st)
	}
	// Someone in line may still re-enter (to the back).
	if tk := enter(t, s, q, "w1"); tk.Status != Waiting || tk.Position != 3 {
		t.Fatalf("re-entry in a full line: %+v", tk)
	}
	if err := s.Leave(ctx, q, Caller{User: "w2"}); err != nil {
		t.Fatal(err)
	}
	if tk := enter(t, s, q, "late"); tk.Status != Waiting {
		t.Fatalf("after a leave: %+v", tk)
	}
	zero := 0
	setUpdate(t, s, q, Update{MaxWaiting: &zero})
	if tk := enter(t, s, q, "later"); tk.Status != Waiting {
		t.Fatalf("cap off: %+v", tk)
	}

	// A scheduled opening's draw counts as the line.
	s2, q2, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	two := 2
	opens, from := time.Now().Add(time.Hour), time.Now().Add(-time.Minute)
	setUpdate(t, s2, q2, Update{MaxWaiting: &two, OpensAt: &opens, PrequeueFrom: &from})
	for _, u := range []string{"d1", "d2"} {
		if tk := enter(t, s2, q2, u); tk.Status != Waiting || tk.Position != 0 {
			t.Fatalf("%s in the draw: %+v", u, tk)
		}
	}
	_, err = s2.Enter(ctx, q2, Entry{Caller: Caller{User: "d3"}})
	refusedWith(t, err, ErrQueueFull, 2*time.Hour)
	if tk := enter(t, s2, q2, "d1"); tk.Status != Waiting {
		t.Fatalf("a participant entering again: %+v", tk)
	}
}

// Proof of work: asked for, an enter without one, with too little, with
// an expired one or with one already used is refused; a good one is
// accepted once. A call refused by the rate limit does not use it up.
func TestProofOfWork(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	limits := Limits{EnterPerClient: Limit{Rate: 0.001, Burst: 1}}
	s, q, _ := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: limits})
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "free"}}); err != nil {
		t.Fatalf("no difficulty set: %v", err)
	}
	eight := 8
	setUpdate(t, s, q, Update{ChallengeDifficulty: &eight})
	later := time.Now().Add(time.Minute)
	for name, p := range map[string]Proof{
		"none":        {},
		"too easy":    {ID: "p1", Difficulty: 7, Expires: later},
		"expired":     {ID: "p2", Difficulty: 8, Expires: time.Now().Add(-time.Second)},
		"no id at 16": {Difficulty: 16, Expires: later},
	} {
		if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "u", Proof: p}}); !errors.Is(err, ErrChallengeRequired) {
			t.Errorf("%s: %v, want ErrChallengeRequired", name, err)
		}
	}
	good := Proof{ID: "p3", Difficulty: 9, Expires: later}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "u", Proof: good}}); err != nil {
		t.Fatalf("a good proof: %v", err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "v", Proof: good}}); !errors.Is(err, ErrChallengeRequired) {
		t.Fatalf("the same proof again: %v", err)
	}
	// Rate-limited first: the proof is not spent and works on retry.
	fresh := Proof{ID: "p4", Difficulty: 8, Expires: later}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "w", Client: "c", Proof: Proof{ID: "p5", Difficulty: 8, Expires: later}}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "x", Client: "c", Proof: fresh}})
	refusedWith(t, err, ErrRateLimited, 2000*time.Second)
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "x", Proof: fresh}}); err != nil {
		t.Fatalf("the proof after a rate-limited call: %v", err)
	}
}

// A newcomer refused by a full line keeps its proof of work unspent.
func TestFullLineKeepsTheProof(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	enter(t, s, q, "in")
	enter(t, s, q, "w1")
	one, eight := 1, 8
	setUpdate(t, s, q, Update{MaxWaiting: &one, ChallengeDifficulty: &eight})
	kept := Proof{ID: "kept", Difficulty: 8, Expires: time.Now().Add(time.Minute)}
	_, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "late", Proof: kept}})
	refusedWith(t, err, ErrQueueFull, 2*time.Hour)
	two := 2
	setUpdate(t, s, q, Update{MaxWaiting: &two})
	if tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "late", Proof: kept}}); err != nil || tk.Status != Waiting {
		t.Fatalf("the same proof once there is room: %+v %v", tk, err)
	}
	if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: "again", Proof: kept}}); !errors.Is(err, ErrChallengeRequired) {
		t.Fatalf("then spent: %v", err)
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, l := range []Limits{
		{EnterPerClient: Limit{Rate: -1, Burst: 1}},
		{StatusPerPlace: Limit{Rate: 1, Burst: 0}},
		{EnterPerPlace: Limit{Rate: 1, Burst: 2_000_000}},
	} {
		if _, err := NewStore(redistest.Client(t), []string{"q"}, Settings{RefillSize: 1, RefillInterval: time.Second, SessionTTL: time.Second, Limits: l}, time.Second); err == nil {
			t.Errorf("%+v accepted", l)
		}
	}
	for _, u := range []Update{{MaxWaiting: ptr(-1)}, {MaxWaiting: ptr(MaxMaxWaiting + 1)}, {ChallengeDifficulty: ptr(33)}, {ChallengeDifficulty: ptr(-1)}} {
		if err := u.Validate(); err == nil {
			t.Errorf("update %+v accepted", u)
		}
	}
}

func ptr[T any](v T) *T { return &v }
