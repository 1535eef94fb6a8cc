package e2e

import (
	"context"
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/adminsession"
	"github.com/waitroom/waitroom/internal/testkit/oidctest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// The back office's cookies over plain http (httpapi's adminCookieName
// and signInCookieName without Secure).
const (
	sessionCookie = "wr_admin"
	signInCookie  = "wr_signin"
)

// People sign in to the back office through the company's identity
// provider, each with the role their groups map to: a viewer reads every
// queue and changes none, an operator changes the one queue its group
// covers and only reads the other, and someone whose groups map to no
// role is refused. A callback used once is refused when replayed.
func TestAdminSignInThroughProvider(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)

	relay := newCallbackRelay(t)
	const clientID = "waitroom-back-office"
	clientSecret := rand.Text()
	idp := oidctest.New(t, oidctest.Options{ClientID: clientID, ClientSecret: clientSecret, RedirectURIs: []string{relay.url}})
	// Kim operates the first queue and watches the rest, as in the
	// README's example: a grant names the queues it reads too.
	idp.AddUser(oidctest.User{Subject: "kim", Email: "kim@example.com", EmailVerified: true, Groups: []string{"wr-ops", "wr-view"}})
	idp.AddUser(oidctest.User{Subject: "vic", Email: "vic@example.com", EmailVerified: true, Groups: []string{"wr-view"}})
	idp.AddUser(oidctest.User{Subject: "bob", Email: "bob@example.com", EmailVerified: true, Groups: []string{"marketing"}})

	// Two queues; the operators' group covers the first only. The sign-in
	// is built in the server's options, where the queues' names are known.
	var operated string
	s := newStack(t, stackOptions{settings: fastTicks(2), twoRooms: true, behindProxy: true,
		api: func(o *httpapi.Options) {
			operated = o.Store.Queues()[0]
			roles, err := adminauth.ParseMapping("wr-admin=admin,wr-ops=operator:" + operated + ",wr-view=viewer")
			if err != nil {
				t.Fatal(err)
			}
			o.SignIn, err = adminsession.NewSignIn(o.Redis, newSecret(), adminsession.OIDC{Issuer: idp.Issuer(),
				ClientID: clientID, ClientSecret: clientSecret, RedirectURL: relay.url, Roles: roles})
			if err != nil {
				t.Fatal(err)
			}
		}})
	if operated != s.queue {
		t.Fatalf("the operators' queue is %q, want the stack's first, %q", operated, s.queue)
	}
	relay.sendTo(s.url)
	sessions, err := adminsession.New(s.rdb, adminsession.Options{}) // reads the server's sessions in Redis
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, chromium)
	// The failed callbacks below count against this test's own address,
	// not 127.0.0.1, which the package's other tests share (10 failures a
	// minute lock an address out of the back office).
	client := fmt.Sprintf("198.51.100.%d", 1+mrand.IntN(254))
	if _, err := chromedp.Call(b.ctx, network.SetExtraHTTPHeaders,
		network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Forwarded-For": client}}); err != nil {
		t.Fatalf("X-Forwarded-For: %v", err)
	}

	sectionA, sectionB := fmt.Sprintf(`.queue[data-queue=%q]`, s.queue), fmt.Sprintf(`.queue[data-queue=%q]`, s.queueB)
	refillA := sectionA + " [data-setting=refill_size]"
	// signIn opens the sign-in page, has subject sign in at the provider
	// and waits for the dashboard.
	signIn := func(subject string) {
		t.Helper()
		b.navigate(s.url + "/admin")
		b.waitJS(5*time.Second, "the sign-in page with the provider's button and the token form",
			`document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden && `+
				`!document.getElementById('login-oidc').hidden && !document.getElementById('login-form').hidden`)
		idp.SetNextLogin(subject)
		b.do("sign in at the provider as "+subject, chromedp.Click(chromedp.CSS("#login-provider")))
		b.waitJS(10*time.Second, subject+"'s dashboard", fmt.Sprintf(
			`location.pathname === '/admin' && document.body.dataset.state === 'signed-in' && `+
				`document.querySelector(%q) !== null && document.querySelector(%q) !== null`, sectionA, sectionB))
		c := b.cookie(s.url, sessionCookie)
		switch {
		case c == nil:
			b.fail("signed in without a %s cookie", sessionCookie)
		case !c.HTTPOnly || c.SameSite != network.CookieSameSiteStrict || c.Secure || c.Path != "/":
			t.Errorf("%s cookie: HttpOnly %v, SameSite %s, Secure %v, Path %q; want HttpOnly, Strict, not Secure (plain http), /",
				sessionCookie, c.HTTPOnly, c.SameSite, c.Secure, c.Path)
		}
		if c := b.cookie(s.url, signInCookie); c != nil {
			t.Errorf("the %s cookie outlived the sign-in", signInCookie)
		}
	}
	// signOut presses Sign out and checks the session ended: the sign-in
	// page is back, the cookie gone, and the session unknown to the
	// server.
	signOut := func() {
		t.Helper()
		c := b.cookie(s.url, sessionCookie)
		if c == nil {
			b.fail("signed in without a %s cookie", sessionCookie)
		}
		b.do("sign out", chromedp.Click(chromedp.CSS("#signout")))
		b.waitJS(5*time.Second, "the sign-in page after signing out",
			`document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden && `+
				`!document.getElementById('login-oidc').hidden`)
		wait.For(t, 30*time.Second, "the session cookie cleared", func() (bool, string) {
			c := b.cookie(s.url, sessionCookie)
			return c == nil, fmt.Sprint(c)
		})
		if a := pageFetch(b, http.MethodGet, "/admin/v1/me", ""); a.Status != http.StatusUnauthorized {
			t.Errorf("GET /admin/v1/me after signing out: %d %s, want 401", a.Status, a.Code)
		}
		if _, live, err := sessions.Find(context.Background(), c.Value); err != nil || live {
			t.Errorf("the session is live after signing out (err %v)", err)
		}
		if shown := eval[bool](b, visible("#whoami")); shown {
			t.Errorf("#whoami still says %q on the sign-in page after signing out", b.text("#whoami"))
		}
	}

	// 1. A viewer reads every queue and changes none.
	signIn("vic")
	if got := b.text("#whoami"); got != "vic@example.com · viewer" {
		t.Errorf("#whoami = %q, want vic@example.com · viewer", got)
	}
	for _, sec := range []string{sectionA, sectionB} {
		if ro := eval[bool](b, fmt.Sprintf(`document.querySelector(%q).hasAttribute('data-readonly')`, sec)); !ro {
			t.Errorf("%s: no data-readonly for a viewer", sec)
		}
		if n := eval[int](b, countVisible(sec, controls)); n != 0 {
			t.Errorf("%s: %d controls visible to a viewer", sec, n)
		}
		if shown := eval[bool](b, visible(sec+" .readonly-note")); !shown {
			t.Errorf("%s: the read-only note is hidden from a viewer", sec)
		}
	}
	b.screenshot("viewer")
	if a := pageFetch(b, http.MethodPatch, "/admin/v1/queues/"+s.queue, `{"refill_size": 9}`); a.Status != http.StatusForbidden || a.Code != "forbidden_role" {
		t.Errorf("a viewer's PATCH: %d %s, want 403 forbidden_role", a.Status, a.Code)
	}
	if n := s.info().Settings.RefillSize; n != 2 {
		t.Errorf("refill size %d after a viewer's PATCH, want 2", n)
	}
	signOut()

	// 2. An operator changes its queue, and only reads the other.
	signIn("kim")
	kim := relay.last()
	if kim.query == "" || kim.cookie == "" {
		t.Fatalf("the relay passed on no sign-in with its cookie: %+v", kim)
	}
	if got := b.text("#whoami"); got != "kim@example.com · operator" {
		t.Errorf("#whoami = %q, want kim@example.com · operator", got)
	}
	if ro := eval[bool](b, fmt.Sprintf(`document.querySelector(%q).hasAttribute('data-readonly')`, sectionA)); ro {
		t.Errorf("%s: data-readonly for its operator", sectionA)
	}
	if ro := eval[bool](b, fmt.Sprintf(`document.querySelector(%q).hasAttribute('data-readonly')`, sectionB)); !ro {
		t.Errorf("%s: no data-readonly for an operator of %s only", sectionB, s.queue)
	}
	if n := eval[int](b, countVisible(sectionB, controls)); n != 0 {
		t.Errorf("%s: %d controls visible to an operator of %s only", sectionB, n, s.queue)
	}
	b.waitJS(5*time.Second, "the refill size's field", visible(refillA+" .setting-input")+" && "+visible(sectionA+" .pause-btn"))
	saveSetting(b, refillA+" .setting-input", refillA+" .setting-submit", "5")
	b.waitJS(5*time.Second, "the saved message", fmt.Sprintf(`%s && %s === '5'`, jsShown(refillA+" .setting-ok"), jsText(sectionA+" .refill-size")))
	wait.For(t, 30*time.Second, "refill size 5 in the store", func() (bool, string) {
		n := s.info().Settings.RefillSize
		return n == 5, strconv.Itoa(n)
	})
	if a := pageFetch(b, http.MethodPatch, "/admin/v1/queues/"+s.queueB, `{"refill_size": 9}`); a.Status != http.StatusForbidden || a.Code != "forbidden_queue" {
		t.Errorf("an operator's PATCH of another queue: %d %s, want 403 forbidden_queue", a.Status, a.Code)
	}
	if info, err := s.store.Info(context.Background(), s.queueB); err != nil || info.Settings.RefillSize != 2 {
		t.Errorf("%s: refill size %d (err %v) after a PATCH its operator may not make, want 2", s.queueB, info.Settings.RefillSize, err)
	}
	// The audit names the person, and where they were.
	b.waitJS(10*time.Second, "kim's change in the audit", fmt.Sprintf(`%s.includes('by kim@example.com')`, jsText(sectionA+" .audit-list .audit-entry")))
	entry := b.text(sectionA + " .audit-list .audit-entry")
	for _, want := range []string{"Settings changed", "by kim@example.com", "from " + client, "refill_size: 2 → 5"} {
		if !strings.Contains(entry, want) {
			t.Errorf("audit entry %q, want it to say %q", entry, want)
		}
	}
	b.screenshot("operator")
	signOut()

	// 3. Someone whose groups map to no role is refused, with no session.
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the provider's button", `!document.getElementById('login-oidc').hidden`)
	idp.SetNextLogin("bob")
	b.do("sign in at the provider as bob", chromedp.Click(chromedp.CSS("#login-provider")))
	refused(t, b, s, "no_role", http.StatusForbidden)
	b.screenshot("no-role")

	// 4. kim's callback again: its state is spent. Without the sign-in
	// cookie (the callback cleared it) and with it put back, as one who
	// kept a copy would, so that the state's claim in Redis is what
	// refuses it.
	b.navigate(s.url + "/admin/callback?" + kim.query)
	refused(t, b, s, "invalid_state", http.StatusBadRequest)
	if _, err := chromedp.Call(b.ctx, network.SetCookie, network.SetCookieParams{Name: signInCookie, Value: kim.cookie,
		URL: s.url, Path: "/", HTTPOnly: new(true), SameSite: network.CookieSameSiteLax}); err != nil {
		t.Fatalf("put back the sign-in cookie: %v", err)
	}
	b.navigate(s.url + "/admin/callback?" + kim.query)
	refused(t, b, s, "invalid_state", http.StatusBadRequest)
}

// controls are what a role that may only read a queue must not see in
// its section.
const controls = ".setting-form, .pause-btn, .adapt-btn, .opening-form, .text-form"

// refused waits for the callback's page that refuses a sign-in with code,
// answered with status, and checks it left no session cookie.
func refused(t *testing.T, b *browser, s *stack, code string, status int) {
	t.Helper()
	b.waitJS(10*time.Second, "the refused sign-in's page", fmt.Sprintf(
		`location.pathname === '/admin/callback' && (document.getElementById('signin-error') || {dataset: {}}).dataset.code === %q`, code))
	wait.For(t, 30*time.Second, fmt.Sprintf("the callback answered %d", status), func() (bool, string) {
		calls := s.calls.matching(func(c call) bool { return c.path == "/admin/callback" })
		if len(calls) == 0 {
			return false, "no callback"
		}
		last := calls[len(calls)-1].status
		return last == status, strconv.Itoa(last)
	})
	if c := b.cookie(s.url, sessionCookie); c != nil {
		t.Errorf("a %s cookie after a refused sign-in (%s)", sessionCookie, code)
	}
	if c := b.cookie(s.url, signInCookie); c != nil {
		t.Errorf("the %s cookie outlived a refused sign-in (%s)", signInCookie, code)
	}
}

// visible is a JavaScript condition: the first element matching css is
// laid out (not hidden, not display: none, nor inside one that is).
func visible(css string) string {
	return fmt.Sprintf(`((el) => el !== null && el.getClientRects().length > 0)(document.querySelector(%q))`, css)
}

// countVisible is a JavaScript expression: how many elements matching
// css (a list of selectors) inside section are laid out.
func countVisible(section, css string) string {
	return fmt.Sprintf(`Array.from(document.querySelector(%q).querySelectorAll(%q)).filter((el) => el.getClientRects().length > 0).length`, section, css)
}

// pageAnswer is how the server answered a request the page made: its
// status and the API error's code ("" when none).
type pageAnswer struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
}

// pageFetch makes a request from the page, as its scripts do (same
// origin, with its cookies); body is JSON, or "" for none.
func pageFetch(b *browser, method, path, body string) pageAnswer {
	b.t.Helper()
	// Chromium drops a fetch in flight when the network changes under it
	// (Docker starting another test's container: net::ERR_NETWORK_CHANGED),
	// and the fetch rejects. These calls are idempotent (a read, a PATCH
	// refused or setting a value): a dropped one is sent again, twice at
	// most.
	js := fmt.Sprintf(`(async () => {
	  for (let i = 0; ; i++) {
	    try {
	      const r = await fetch(%q, {method: %q, credentials: 'same-origin', cache: 'no-store', headers: {'Content-Type': 'application/json'}, body: %s || undefined});
	      return {status: r.status, code: (((await r.json().catch(() => null)) || {}).error || {}).code || ''};
	    } catch (err) {
	      if (i >= 2) throw err;
	    }
	  }
	})()`, path, method, strconv.Quote(body))
	a, err := chromedp.Run(b.ctx, chromedp.Evaluate[pageAnswer](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("%s %s from the page: %v", method, path, err)
	}
	return a
}

// callbackRelay is the redirect URI the provider knows. The provider
// takes its redirect URIs when it starts, and the sign-in its own when
// the stack's server is built: both before that server has an address.
// The relay has one from the start; it sends the browser on to the
// stack's /admin/callback with the provider's query as it came, as a
// public address in front of the replicas would. It keeps the last
// sign-in it passed on, for replaying.
type callbackRelay struct {
	url string // the redirect URI, <relay>/admin/callback

	mu   sync.Mutex
	to   string  // the stack's base URL, once it has one
	seen relayed // the last sign-in passed on
}

// relayed is a sign-in the relay passed on: the provider's query, and
// the browser's sign-in cookie that came with it.
type relayed struct {
	query, cookie string
}

func newCallbackRelay(t *testing.T) *callbackRelay {
	t.Helper()
	r := &callbackRelay{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		seen := relayed{query: req.URL.RawQuery}
		if c, err := req.Cookie(signInCookie); err == nil {
			seen.cookie = c.Value
		}
		r.mu.Lock()
		to := r.to
		r.seen = seen
		r.mu.Unlock()
		if to == "" || req.URL.Path != "/admin/callback" {
			http.NotFound(w, req)
			return
		}
		http.Redirect(w, req, to+"/admin/callback?"+req.URL.RawQuery, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/admin/callback"
	return r
}

// sendTo sets the stack the relay sends the browser to.
func (r *callbackRelay) sendTo(base string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.to = base
}

// last is the last sign-in the relay passed on.
func (r *callbackRelay) last() relayed {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen
}
