package adminsession_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/oidctest"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(time.Now().UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

var kim = adminsession.Person{Name: "kim@example.com", Subject: "s-kim", Grants: []adminauth.Grant{{Role: adminauth.Operator, Queues: []string{"sale"}}}}

func newSessions(t *testing.T, o adminsession.Options) *adminsession.Sessions {
	t.Helper()
	s, err := adminsession.New(redistest.Client(t), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSessionStartFindEnd(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	s := newSessions(t, adminsession.Options{Now: c.now})
	id, err := s.Start(ctx, kim)
	if err != nil || !adminsession.WellFormed(id) {
		t.Fatalf("start: %q %v", id, err)
	}
	p, ok, err := s.Find(ctx, id)
	if err != nil || !ok || p.Actor != (actor.Actor{Kind: actor.KindOIDC, Name: kim.Name}) || p.Session != id || !p.Allows(adminauth.Operator, "sale") || p.Sees("refund") {
		t.Fatalf("find: %+v %v %v", p, ok, err)
	}
	if err := s.End(ctx, kim.Name, id); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.Find(ctx, id); ok {
		t.Fatal("found after it ended")
	}
	for _, bad := range []string{"", "x", id + "A", id[:42] + "!", string(make([]byte, 43))} {
		if _, ok, err := s.Find(ctx, bad); ok || err != nil {
			t.Fatalf("%q: %v %v", bad, ok, err)
		}
	}
}

// TestEndPersonEverywhereWithinASecond: an admin ends all of a person's
// sessions; another replica that trusted one refuses it once CacheFor
// has passed on its clock.
func TestEndPersonEverywhereWithinASecond(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	ca, cb := newClock(), newClock()
	a, _ := adminsession.New(rdb, adminsession.Options{Now: ca.now})
	b, _ := adminsession.New(rdb, adminsession.Options{Now: cb.now})
	p := kim
	p.Name = "lee@example.com"
	ids := make([]string, 3)
	for i := range ids {
		ids[i], _ = a.Start(ctx, p)
		if _, ok, err := b.Find(ctx, ids[i]); !ok || err != nil {
			t.Fatal(ok, err)
		}
	}
	other, _ := a.Start(ctx, kim)
	n, err := a.EndPerson(ctx, p.Name)
	if err != nil || n != 3 {
		t.Fatalf("ended %d, %v", n, err)
	}
	cb.add(adminsession.CacheFor)
	for _, id := range ids {
		if _, ok, _ := b.Find(ctx, id); ok {
			t.Fatal("a revoked session still works on another replica past CacheFor")
		}
	}
	if _, ok, _ := b.Find(ctx, other); !ok {
		t.Fatal("another person's session ended too")
	}
	// Again, and for someone who never signed in: nothing to end, said so.
	for _, name := range []string{p.Name, "nobody@example.com"} {
		if n, err := a.EndPerson(ctx, name); !errors.Is(err, adminsession.ErrNoSession) || n != 0 {
			t.Fatalf("ending %s with no session: %d, %v", name, n, err)
		}
	}
}

// TestIdleAndAbsoluteTimeouts, on the Redis clock.
func TestIdleAndAbsoluteTimeouts(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	rdb := redistest.Client(t)
	idle, _ := adminsession.New(rdb, adminsession.Options{Idle: 300 * time.Millisecond, Absolute: time.Hour, Now: c.now})
	id, _ := idle.Start(ctx, kim)
	// Unused (a Find would renew it), it ends after the idle time.
	wait.For(t, 10*time.Second, "the idle session to end", func() (bool, string) { return rdb.Exists(ctx, rediskeys.Session(id)).Val() == 0, "" })
	c.add(adminsession.CacheFor) // never served from the cache
	if _, ok, _ := idle.Find(ctx, id); ok {
		t.Fatal("an idle session was found")
	}
	// Used all the time, it still ends at the absolute time.
	abs := newSessions(t, adminsession.Options{Idle: time.Hour, Absolute: 600 * time.Millisecond, Now: c.now})
	id, _ = abs.Start(ctx, kim)
	wait.For(t, 10*time.Second, "the session to end at the absolute time", func() (bool, string) {
		c.add(adminsession.CacheFor)
		_, ok, _ := abs.Find(ctx, id)
		return !ok, ""
	})
}

// provider is a real OpenID provider with three people.
func provider(t *testing.T, redirect string) *oidctest.Provider {
	p := oidctest.New(t, oidctest.Options{ClientID: "waitroom", ClientSecret: "s3cret", RedirectURIs: []string{redirect}})
	p.AddUser(oidctest.User{Subject: "s-kim", Email: "kim@example.com", EmailVerified: true, Groups: []string{"wr-ops"}})
	p.AddUser(oidctest.User{Subject: "s-ann", Email: "ann@example.com", EmailVerified: true, Groups: []string{"wr-admin", "other"}})
	p.AddUser(oidctest.User{Subject: "s-bob", Email: "bob@example.com", EmailVerified: true, Groups: []string{"marketing"}})
	p.AddUser(oidctest.User{Subject: "s-eve", Email: "eve@example.com", EmailVerified: false, Groups: []string{"wr-view"}})
	return p
}

const redirect = "http://127.0.0.1:1/admin/callback" // never called: the test reads the provider's redirect

func newSignIn(t *testing.T, p *oidctest.Provider) *adminsession.SignIn {
	t.Helper()
	m, err := adminauth.ParseMapping("wr-admin=admin,wr-ops=operator:sale|refund,wr-view=viewer")
	if err != nil {
		t.Fatal(err)
	}
	s, err := adminsession.NewSignIn(redistest.Client(t), []byte("signin-test-secret-0123456789abcdef"),
		adminsession.OIDC{Issuer: p.Issuer(), ClientID: "waitroom", ClientSecret: "s3cret", RedirectURL: redirect, Roles: m})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// authorize follows the browser's way to the provider and back: the
// state and code the provider sends back.
func authorize(t *testing.T, authURL, who string) (state, code string) {
	t.Helper()
	u, _ := url.Parse(authURL)
	q := u.Query()
	q.Set("login_hint", who)
	u.RawQuery = q.Encode()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(u.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusFound || err != nil {
		t.Fatalf("authorize: %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	return back.Query().Get("state"), back.Query().Get("code")
}

func TestSignIn(t *testing.T) {
	ctx := context.Background()
	p := provider(t, redirect)
	s := newSignIn(t, p)

	to, cookie, err := s.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	state, code := authorize(t, to, "s-kim")
	got := p.Authorizations()[len(p.Authorizations())-1]
	if got.Get("code_challenge_method") != "S256" || got.Get("code_challenge") == "" || got.Get("nonce") == "" || got.Get("state") != state {
		t.Fatalf("authorization request %v", got)
	}
	person, err := s.Finish(ctx, state, code, cookie)
	if err != nil || person.Name != "kim@example.com" || len(person.Grants) != 1 || person.Grants[0].Role != adminauth.Operator {
		t.Fatalf("finish: %+v %v", person, err)
	}
	// The state is spent: replayed, it is refused.
	if _, err := s.Finish(ctx, state, code, cookie); !errors.Is(err, adminsession.ErrState) {
		t.Fatalf("replayed: %v", err)
	}
}

func TestSignInRefusals(t *testing.T) {
	ctx := context.Background()
	p := provider(t, redirect)
	s := newSignIn(t, p)
	for _, c := range []struct {
		name string
		who  string
		// change is what goes wrong between the provider and Finish.
		change func(state, code, cookie *string)
		before func()
		want   error
	}{
		{"no role", "s-bob", nil, nil, adminsession.ErrNoRole},
		{"another browser's cookie", "s-kim", func(_, _, cookie *string) {
			_, other, _ := s.Begin(ctx)
			*cookie = other
		}, nil, adminsession.ErrState},
		{"no cookie", "s-kim", func(_, _, cookie *string) { *cookie = "" }, nil, adminsession.ErrState},
		{"another state", "s-kim", func(state, _, _ *string) { *state = "X" + *state }, nil, adminsession.ErrState},
		{"a code not the provider's", "s-kim", func(_, code, _ *string) { *code = "made-up" }, nil, adminsession.ErrCode},
		{"audience", "s-kim", nil, func() { p.Tamper(func(c map[string]any) { c["aud"] = "someone-else" }) }, adminsession.ErrIDToken},
		{"nonce", "s-kim", nil, func() { p.Tamper(func(c map[string]any) { c["nonce"] = "replayed" }) }, adminsession.ErrIDToken},
		{"expired", "s-kim", nil, func() { p.Tamper(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() }) }, adminsession.ErrIDToken},
		{"issuer", "s-kim", nil, func() { p.Tamper(func(c map[string]any) { c["iss"] = "https://evil.example" }) }, adminsession.ErrIDToken},
		{"signature", "s-kim", nil, func() { p.SignWithOtherKey(true) }, adminsession.ErrIDToken},
	} {
		t.Run(c.name, func(t *testing.T) {
			to, cookie, err := s.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			state, code := authorize(t, to, c.who)
			if c.change != nil {
				c.change(&state, &code, &cookie)
			}
			if c.before != nil {
				c.before()
			}
			if _, err := s.Finish(ctx, state, code, cookie); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
	// An unverified e-mail is not a name: the subject is.
	to, cookie, _ := s.Begin(ctx)
	state, code := authorize(t, to, "s-eve")
	if person, err := s.Finish(ctx, state, code, cookie); err != nil || person.Name != "s-eve" {
		t.Fatalf("unverified e-mail: %+v %v", person, err)
	}
}

// TestSignInCookieForgeries: cookies the service did not seal never open.
func TestSignInCookieForgeries(t *testing.T) {
	ctx := context.Background()
	p := provider(t, redirect)
	s := newSignIn(t, p)
	to, cookie, _ := s.Begin(ctx)
	state, code := authorize(t, to, "s-kim")
	r := rand.New(rand.NewPCG(3, 4))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	for i := 0; i < 500; i++ {
		b := []byte(cookie)
		j := r.IntN(len(b))
		if c := alphabet[r.IntN(len(alphabet))]; c != b[j] {
			b[j] = c
		} else {
			b = b[:j]
		}
		if _, err := s.Finish(ctx, state, code, string(b)); !errors.Is(err, adminsession.ErrState) {
			t.Fatalf("forged cookie %q: %v", b, err)
		}
	}
	// None of those spent the state: the real cookie still signs in.
	if _, err := s.Finish(ctx, state, code, cookie); err != nil {
		t.Fatalf("the real cookie after forgeries: %v", err)
	}
}
