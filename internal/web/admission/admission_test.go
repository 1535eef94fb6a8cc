package admission_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/admission"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var (
	placeSecret = []byte("place-secret-of-the-admission-tests-32b")
	joinSecret  = []byte("join-secret-of-the-admission-tests-32by")
	addr        = netip.MustParseAddr("198.51.100.7")
)

func credentials(t testing.TB) *place.Credentials {
	t.Helper()
	c, err := place.New(placeSecret)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func joiner(t testing.TB) *place.Join {
	t.Helper()
	j, err := place.NewJoin(joinSecret)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func challenges(t testing.TB) *challenge.Challenges {
	t.Helper()
	c, err := challenge.New(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// joinToken is a site's join token for sub in queue q.
func joinToken(t testing.TB, q, sub string) string {
	t.Helper()
	now := time.Now()
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Subject: sub, Audience: jwt.ClaimStrings{q},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
	}).SignedString(joinSecret)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// trips is a go-redis hook that counts round trips: a command or a
// pipeline, one each.
type trips struct{ n atomic.Int64 }

func (c *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// newRedis is an admission over a queue of its own on the tests' Redis,
// its client counting round trips.
func newRedis(t *testing.T) (*admission.Admission, *queue.Store, string, *trips) {
	t.Helper()
	rdb := redistest.Client(t)
	count := &trips{}
	rdb.AddHook(count)
	q := fmt.Sprintf("adm%d-%s", time.Now().UnixNano(), strings.ReplaceAll(t.Name(), "/", "-"))
	store, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	a := admission.New(admission.Options{Store: store, Places: credentials(t), Challenges: challenges(t), Join: joiner(t)})
	return a, store, q, count
}

// The common enter, a new anonymous member or a credential's member
// entering again, is one round trip to Redis: identity is resolved in
// the process, and the store's enter is one script call.
func TestEnterCommonCaseIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _, q, count := newRedis(t)
	// The first call loads the script's library (FCALL, FUNCTION LOAD,
	// FCALL): not the common case.
	if _, err := a.Enter(ctx, admission.Request{Queue: q, Addr: addr}); err != nil {
		t.Fatal(err)
	}

	before := count.n.Load()
	res, err := a.Enter(ctx, admission.Request{Queue: q, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if n := count.n.Load() - before; n != 1 {
		t.Errorf("a new member's enter took %d round trips, want 1", n)
	}
	if res.Ticket.Status != queue.Waiting || res.Token == "" || res.Cookie != res.Token || res.Member == "" {
		t.Fatalf("new member: %+v", res)
	}

	before = count.n.Load()
	again, err := a.Enter(ctx, admission.Request{Queue: q, Credential: res.Token, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if n := count.n.Load() - before; n != 1 {
		t.Errorf("entering again with a credential took %d round trips, want 1", n)
	}
	if again.Member != res.Member || again.Ticket.Status != queue.Waiting || again.Token == "" {
		t.Fatalf("entering again: %+v, want member %q waiting", again, res.Member)
	}
}

// A join gives up the anonymous place the browser held: the answer
// counts the line without it, and the account's member holds the place.
func TestEnterJoinReplacesAnonymousPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, store, q, _ := newRedis(t)
	first, err := a.Enter(ctx, admission.Request{Queue: q, Addr: addr}) // admitted: the one token
	if err != nil || first.Ticket.Status != queue.Entered {
		t.Fatalf("first: %+v, %v", first, err)
	}
	anon, err := a.Enter(ctx, admission.Request{Queue: q, Addr: addr})
	if err != nil || anon.Ticket.Status != queue.Waiting {
		t.Fatalf("anonymous: %+v, %v", anon, err)
	}
	res, err := a.Enter(ctx, admission.Request{Queue: q, JoinToken: joinToken(t, q, "ada"), Credential: anon.Cookie, Addr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if res.Member != "u:ada" || res.Ticket.Status != queue.Waiting || res.Ticket.Position != 1 || res.Ticket.Waiting != 1 || res.Token == "" {
		t.Fatalf("join: %+v, want u:ada waiting alone", res)
	}
	if tk, err := store.Status(ctx, q, queue.Caller{User: anon.Member}); err != nil || tk.Status != queue.NotWaiting {
		t.Fatalf("the anonymous place after the join: %+v, %v", tk, err)
	}
}

// fakeStore answers every enter with err (and a waiting ticket when nil)
// and remembers what it was asked.
type fakeStore struct {
	err   error
	calls []queue.Entry
}

func (f *fakeStore) Redeem(ctx context.Context, q, _ string, e queue.Entry) (queue.Ticket, string, error) {
	t, err := f.Enter(ctx, q, e)
	return t, e.User, err
}

func (f *fakeStore) Enter(_ context.Context, _ string, e queue.Entry) (queue.Ticket, error) {
	f.calls = append(f.calls, e)
	if f.err != nil {
		return queue.Ticket{}, f.err
	}
	return queue.Ticket{Status: queue.Waiting, Position: 3, Seq: 42}, nil
}

// fakeHandoffs moves the place of the hand-over "good" to member "moved",
// and remembers the place given up.
type fakeHandoffs struct {
	err      error
	called   bool
	replaces string
	gen      int64
}

func (f *fakeHandoffs) Enter(_ context.Context, _, input, _, replaces string, replacesGen int64) (handoff.Moved, queue.Ticket, error) {
	f.called, f.replaces, f.gen = true, replaces, replacesGen
	if input != "good" {
		return handoff.Moved{}, queue.Ticket{}, handoff.ErrInvalid
	}
	return handoff.Moved{Member: "moved", Seq: 7, Gen: 2}, queue.Ticket{Status: queue.Waiting, Seq: 7}, f.err
}

// What becomes of the place cookie when an enter fails: a place that
// moved clears a browser's (not an app's: it has none), an outcome the
// store could not tell leaves a credential without an arrival number, an
// account's place in another line leaves the cookie alone, and a plain
// id never gets one.
func TestEnterFailureCookie(t *testing.T) {
	places := credentials(t)
	const q = "sale"
	cred := places.IssueGen(q, "m1", 5, 1)
	id := "load-1"
	for _, tc := range []struct {
		name string
		req  admission.Request
		err  error
		// clear: ClearCookie; member: the cookie's credential names it,
		// with no arrival number ("": no cookie).
		clear  bool
		member string
	}{
		{"moved, cookie", admission.Request{Credential: cred}, queue.ErrMoved, true, ""},
		{"moved, bearer", admission.Request{Credential: cred, Bearer: true}, queue.ErrMoved, false, ""},
		{"unknown outcome, credential", admission.Request{Credential: cred}, errors.New("redis away"), false, "m1"},
		{"unknown outcome, new member", admission.Request{}, errors.New("redis away"), false, "new"},
		{"other line", admission.Request{JoinToken: joinToken(t, q, "ada")}, &queue.OtherLineError{Lane: "vip"}, false, ""},
		{"plain id", admission.Request{UserID: &id}, errors.New("redis away"), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.New(admission.Options{Store: &fakeStore{err: tc.err}, Places: places, Challenges: challenges(t),
				Join: joiner(t), InsecureUserIDs: true})
			tc.req.Queue = q
			res, err := a.Enter(context.Background(), tc.req)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if res.ClearCookie != tc.clear || res.Token != "" {
				t.Fatalf("%+v: clear %v, and no token", res, tc.clear)
			}
			switch {
			case tc.member == "" && res.Cookie != "":
				t.Fatalf("cookie %q, want none", res.Cookie)
			case tc.member != "":
				p, err := places.VerifyPlace(q, res.Cookie)
				if err != nil || p.Seq != 0 || (tc.member != "new" && p.Member != tc.member) || p.Member != res.Member {
					t.Fatalf("cookie %+v, %v; want %s's place without an arrival number", p, err, tc.member)
				}
			}
		})
	}
}

// A hand-over's place is the caller's whatever its ticket's fate: the
// cookie is set even when the status after the move failed.
func TestEnterHandoff(t *testing.T) {
	places := credentials(t)
	const q = "sale"
	old := places.IssueGen(q, "before", 9, 0)
	for _, tc := range []struct {
		name    string
		req     admission.Request
		moveErr error
		wantErr error
		cookie  bool
	}{
		{"taken over", admission.Request{Handoff: "good", Credential: old}, nil, nil, true},
		{"status failed", admission.Request{Handoff: "good"}, errors.New("redis away"), nil, true},
		{"unknown", admission.Request{Handoff: "bad"}, nil, handoff.ErrInvalid, false},
		{"with a join token", admission.Request{Handoff: "good", JoinToken: "x"}, nil, admission.ErrTwoIdentities, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &fakeHandoffs{err: tc.moveErr}
			store := &fakeStore{}
			a := admission.New(admission.Options{Store: store, Places: places, Challenges: challenges(t), Handoffs: h})
			tc.req.Queue = q
			res, err := a.Enter(context.Background(), tc.req)
			want := tc.wantErr
			if want == nil {
				want = tc.moveErr
			}
			if (want == nil) != (err == nil) || want != nil && !errors.Is(err, want) {
				t.Fatalf("err %v, want %v", err, want)
			}
			if len(store.calls) != 0 {
				t.Fatalf("a hand-over asked the store to enter %+v", store.calls)
			}
			if !tc.cookie {
				if res.Cookie != "" {
					t.Fatalf("cookie set: %+v", res)
				}
				return
			}
			p, err := places.VerifyPlace(q, res.Cookie)
			if err != nil || p != (place.Place{Member: "moved", Seq: 7, Gen: 2}) {
				t.Fatalf("cookie %+v, %v", p, err)
			}
			if (tc.moveErr == nil) != (res.Token == res.Cookie) {
				t.Fatalf("token %q with err %v", res.Token, tc.moveErr)
			}
			if tc.req.Credential != "" && (h.replaces != "before" || h.gen != 0) {
				t.Fatalf("gave up %q (gen %d), want the place the cookie held", h.replaces, h.gen)
			}
		})
	}
	a := admission.New(admission.Options{Store: &fakeStore{}, Places: places, Challenges: challenges(t)})
	if _, err := a.Enter(context.Background(), admission.Request{Queue: q, Handoff: "good"}); !errors.Is(err, handoff.ErrInvalid) {
		t.Fatalf("without hand-overs: %v, want handoff.ErrInvalid", err)
	}
}

// FuzzEnter feeds the inputs a caller controls (the place credential as
// cookie or bearer, a join token, a hand-over, a plain id), forged or
// genuine, and checks what reaches the store: a place is claimed only
// with a credential this queue's secret signed for it, an account only
// with a join token signed for this queue, a place given up only when
// the request proved it, and the credential answered names the member
// the store entered.
func FuzzEnter(f *testing.F) {
	f.Add("", uint8(0), false, "", uint8(0), "", "", false, false)
	f.Add("v2.sale.m1.5.sig", uint8(0), true, "", uint8(0), "", "", false, false)
	f.Add("m1", uint8(1), false, "", uint8(0), "", "", false, false)
	f.Add("m1", uint8(2), true, "", uint8(0), "", "", false, false)
	f.Add("m1", uint8(1), false, "ada", uint8(1), "", "", false, false)
	f.Add("", uint8(0), false, "ada", uint8(2), "", "", false, false)
	f.Add("m1", uint8(1), false, "", uint8(0), "good", "", false, false)
	f.Add("", uint8(0), false, "eyJhbGciOiJub25lIn0.e30.", uint8(0), "ABCD-EFGH", "id", true, true)
	f.Add("", uint8(0), false, "", uint8(0), "", "id", true, false)
	places := credentials(f)
	join := joiner(f)
	ch := challenges(f)
	const q = "sale"
	f.Fuzz(func(t *testing.T, cred string, credKind uint8, bearer bool, jt string, joinKind uint8, ho, id string, hasID, insecure bool) {
		// Genuine inputs as well as raw ones: a credential signed for this
		// queue or for another, a join token for this queue or another.
		switch credKind % 3 {
		case 1:
			cred = places.IssueGen(q, cred, 5, 1)
		case 2:
			cred = places.IssueGen("other", cred, 5, 1)
		}
		switch joinKind % 3 {
		case 1:
			jt = joinToken(t, q, jt)
		case 2:
			jt = joinToken(t, "other", jt)
		}
		req := admission.Request{Queue: q, Credential: cred, Bearer: bearer, JoinToken: jt, Handoff: ho, Addr: addr}
		if hasID {
			req.UserID = &id
		}
		store, h := &fakeStore{}, &fakeHandoffs{}
		a := admission.New(admission.Options{Store: store, Places: places, Challenges: ch, Join: join, Handoffs: h, InsecureUserIDs: insecure})
		res, err := a.Enter(context.Background(), req)

		proved, credOK := places.VerifyPlace(q, cred)
		member, joinErr := join.Member(q, jt)
		if ho != "" {
			if len(store.calls) != 0 {
				t.Fatalf("a hand-over entered %+v", store.calls)
			}
			if h.called && (hasID || jt != "") {
				t.Fatal("a hand-over with another identity was tried")
			}
			if h.replaces != "" && (credOK != nil || h.replaces != proved.Member || h.gen != proved.Gen) {
				t.Fatalf("gave up %q (gen %d), which the request did not prove", h.replaces, h.gen)
			}
			if err == nil && res.Member != "moved" {
				t.Fatalf("took over %+v", res)
			}
			return
		}
		if len(store.calls) > 1 {
			t.Fatalf("%d enters", len(store.calls))
		}
		if len(store.calls) == 0 {
			if err == nil {
				t.Fatal("no enter and no error")
			}
			if res != (admission.Result{}) {
				t.Fatalf("refused, yet answered %+v", res)
			}
			return
		}
		if err != nil {
			t.Fatalf("store entered, yet %v", err)
		}
		e := store.calls[0]
		switch {
		case hasID:
			if !insecure || jt != "" || e.User != id || e.Credential || e.Join || res.Token != "" || res.Cookie != "" {
				t.Fatalf("plain id %q (insecure %v): entered %+v, answered %+v", id, insecure, e, res)
			}
			return
		case jt != "":
			if joinErr != nil || !e.Join || e.User != member || e.Credential || e.Pricing != queue.PriceNone {
				t.Fatalf("join token (%v): entered %+v", joinErr, e)
			}
			if e.Replaces != "" && (credOK != nil || e.Replaces != proved.Member) {
				t.Fatalf("gave up %q, which the request did not prove", e.Replaces)
			}
		case e.Credential:
			if credOK != nil || e.User != proved.Member || e.Gen != proved.Gen {
				t.Fatalf("entered %+v as a credential's member; the credential proves %+v (%v)", e, proved, credOK)
			}
		default:
			if credOK == nil || bearer || e.Proved || e.Replaces != "" || e.Join {
				t.Fatalf("a new member (credential %v, bearer %v): %+v", credOK, bearer, e)
			}
		}
		got, err := places.VerifyPlace(q, res.Token)
		if err != nil || got.Member != e.User || res.Member != e.User || got.Seq != 42 || res.Cookie != res.Token {
			t.Fatalf("answered %+v (%+v, %v) for %q", res, got, err, e.User)
		}
	})
}
