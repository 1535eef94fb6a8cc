package gate_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/pass"
)

// waitroom stands in for a waitroom's public endpoints: its JWKS (which it
// can switch to a new key) and /api/v1/verify, with revocation.
type waitroom struct {
	srv      *httptest.Server
	mu       sync.Mutex
	passes   *pass.Passes
	revoked  map[string]bool
	jwksHits atomic.Int64
	verifies atomic.Int64
}

// tb is what the helpers need of a test, so Example can use them too.
type tb interface {
	Cleanup(func())
	Fatal(args ...any)
}

func newWaitroom(t tb) *waitroom {
	w := &waitroom{revoked: map[string]bool{}}
	w.rotate(t)
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch r.URL.Path {
		case "/.well-known/jwks.json":
			w.jwksHits.Add(1)
			rw.Header().Set("Content-Type", "application/json")
			_, _ = rw.Write(w.passes.Keys().JWKS())
		case "/api/v1/verify":
			w.verifies.Add(1)
			tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			if c, err := w.passes.Verify(tok); err != nil || w.revoked[tok] || c.Queue != r.URL.Query().Get("queue") {
				http.Error(rw, `{"error":{"code":"invalid_pass"}}`, http.StatusUnauthorized)
				return
			}
			_, _ = io.WriteString(rw, `{}`)
		default:
			http.NotFound(rw, r)
		}
	}))
	t.Cleanup(w.srv.Close)
	return w
}

// rotate switches to a new signing key, publishing only it.
func (w *waitroom) rotate(t tb) {
	pem, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(pem)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pass.New(keys, "https://waitroom.test")
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.passes = p
	w.mu.Unlock()
}

func (w *waitroom) issue(t tb, queue string, ends time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	tok, err := w.passes.Issue(queue, "a:holder", time.Now().Add(-time.Second), ends)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (w *waitroom) revoke(tok string) {
	w.mu.Lock()
	w.revoked[tok] = true
	w.mu.Unlock()
}

func newGate(t *testing.T, w *waitroom, verify bool) http.Handler {
	t.Helper()
	o := gate.Options{
		Queue:           "default",
		Issuer:          "https://waitroom.test",
		JWKSURL:         w.srv.URL + "/.well-known/jwks.json",
		WaitingPage:     "https://waitroom.test/q/default",
		RecheckInterval: 100 * time.Millisecond,
	}
	if verify {
		o.VerifyURL = w.srv.URL + "/api/v1/verify"
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return g.Handler(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, ok := gate.FromContext(r.Context())
		if !ok {
			t.Error("no claims in the context")
		}
		fmt.Fprintf(rw, "hello %s of %s", c.Subject, c.Queue)
	}))
}

// get sends h a GET of target with the header pairs given (name, value).
func get(h http.Handler, target string, header ...string) *httptest.ResponseRecorder {
	return send(h, "GET", target, header...)
}

// send sends h a request of method for target with the header pairs
// given (name, value).
func send(h http.Handler, method, target string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestMiddleware(t *testing.T) {
	w := newWaitroom(t)
	h := newGate(t, w, false)
	tok := w.issue(t, "default", time.Now().Add(time.Hour))

	if r := get(h, "/order"); r.Code != http.StatusSeeOther || r.Header().Get("Location") != "https://waitroom.test/q/default" {
		t.Fatalf("no pass: %d %q (an absolute waiting page gets no return)", r.Code, r.Header().Get("Location"))
	}
	if r := get(h, "/order", "Accept", "application/json"); r.Code != 401 || !strings.Contains(r.Body.String(), `"pass_required"`) {
		t.Fatalf("API client without a pass: %d %s", r.Code, r.Body)
	}
	for _, hdr := range [][]string{{"Authorization", "Bearer " + tok}, {"Cookie", gate.CookieName("default", true) + "=" + tok}} {
		if r := get(h, "/order", hdr...); r.Code != 200 || r.Body.String() != "hello a:holder of default" {
			t.Fatalf("%s: %d %s", hdr[0], r.Code, r.Body)
		}
	}
	r := get(h, "/order?a=1&wr_pass="+url.QueryEscape(tok))
	if r.Code != http.StatusSeeOther || r.Header().Get("Location") != "/order?a=1" || !strings.Contains(r.Header().Get("Set-Cookie"), "HttpOnly") {
		t.Fatalf("pass-link exchange: %d %v", r.Code, r.Header())
	}
	other := w.issue(t, "other", time.Now().Add(time.Hour))
	expired := w.issue(t, "default", time.Now().Add(-2*time.Second))
	for name, bad := range map[string]string{"another queue": other, "expired": expired, "tampered": tok[:len(tok)-40] + strings.Repeat("A", 40)} {
		if r := get(h, "/order", "Authorization", "Bearer "+bad); r.Code != 401 {
			t.Errorf("%s: %d", name, r.Code)
		}
	}
	// Offline only: a JWKS fetched once serves every check.
	if n := w.jwksHits.Load(); n != 1 {
		t.Errorf("%d JWKS fetches, want 1", n)
	}
}

// A pass signed with a key the gate has not seen makes it fetch the JWKS
// again, at once; a flood of unknown kids does not make it fetch more.
func TestMiddlewareSeesANewKey(t *testing.T) {
	w := newWaitroom(t)
	h := newGate(t, w, false)
	if r := get(h, "/order", "Authorization", "Bearer "+w.issue(t, "default", time.Now().Add(time.Hour))); r.Code != 200 {
		t.Fatalf("first key: %d", r.Code)
	}
	w.rotate(t)
	fresh := w.issue(t, "default", time.Now().Add(time.Hour))
	if r := get(h, "/order", "Authorization", "Bearer "+fresh); r.Code != 200 {
		t.Fatalf("after rotation: %d %s", r.Code, r.Body)
	}
	before := w.jwksHits.Load()
	w.rotate(t)
	for range 20 {
		get(h, "/order", "Authorization", "Bearer "+w.issue(t, "default", time.Now().Add(time.Hour)))
	}
	if n := w.jwksHits.Load() - before; n > 1 {
		t.Errorf("20 passes of unknown keys made %d JWKS fetches; want at most 1 per 30 s", n)
	}
}

// With VerifyURL, a revoked pass stops opening within the recheck
// interval, and the waitroom is asked at most about once per interval.
func TestMiddlewareSeesRevocation(t *testing.T) {
	w := newWaitroom(t)
	h := newGate(t, w, true)
	tok := w.issue(t, "default", time.Now().Add(time.Hour))
	for range 50 {
		if r := get(h, "/order", "Authorization", "Bearer "+tok); r.Code != 200 {
			t.Fatalf("valid pass: %d", r.Code)
		}
	}
	if n := w.verifies.Load(); n < 1 || n > 5 {
		t.Fatalf("50 quick requests asked the waitroom %d times", n)
	}
	w.revoke(tok)
	wait.For(t, 2*time.Second, "the revoked pass to be refused", func() (bool, string) {
		code := get(h, "/order", "Authorization", "Bearer "+tok).Code
		return code == 401, fmt.Sprintf("status %d", code)
	})
	// The waitroom down: the gate cannot tell, and by default (FailClosed)
	// lets a pass that verifies offline through (failmode_test.go has the
	// other modes).
	fresh := w.issue(t, "default", time.Now().Add(time.Hour))
	w.srv.Close()
	if r := get(h, "/order", "Authorization", "Bearer "+fresh); r.Code != 200 {
		t.Fatalf("waitroom down: %d", r.Code)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for _, o := range []gate.Options{
		{},
		{Queue: "q"},
		{Queue: "q", Issuer: "i"},
		{Queue: "q", Issuer: "i", JWKSURL: "http://x/jwks", WaitingPage: "ftp://x"},
	} {
		if _, err := gate.New(context.Background(), o); err == nil {
			t.Errorf("New(%+v): no error", o)
		}
	}
}
