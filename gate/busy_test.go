package gate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// stubChecker is a Checker whose answers the test sets: every check fails
// with checkErr; "good" verifies offline; with ping, it is a Pinger that
// fails with pingErr (nil: answers).
type stubChecker struct {
	checkErr, pingErr atomic.Pointer[error]
	pings             atomic.Int64
}

func (c *stubChecker) Check(context.Context, string) (gate.Claims, bool, error) {
	return gate.Claims{}, false, *c.checkErr.Load()
}

func (c *stubChecker) CheckOffline(token string) (gate.Claims, bool) {
	return gate.Claims{Queue: "default", Subject: "holder"}, token == "good"
}

type pingingStub struct{ *stubChecker }

func (c pingingStub) Ping(context.Context) error {
	c.pings.Add(1)
	return *c.pingErr.Load()
}

func newStub(checkErr, pingErr error) *stubChecker {
	c := &stubChecker{}
	c.checkErr.Store(&checkErr)
	c.pingErr.Store(&pingErr)
	return c
}

// ask sends a browser's request with the pass ("" none) and names the
// outcome as what does.
func ask(h http.Handler, pass string) string {
	r := httptest.NewRequest("GET", "/order", nil)
	r.Header.Set("Accept", "text/html")
	if pass != "" {
		r.Header.Set("Authorization", "Bearer "+pass)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return what(w)
}

func openGate(t *testing.T, c gate.Checker) http.Handler {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, gate.Options{Queue: "default", Checker: c, Fail: gate.FailOpen, WaitingPage: "/q/default"})
	if err != nil {
		t.Fatal(err)
	}
	return g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cl, _ := gate.FromContext(r.Context())
		_, _ = io.WriteString(w, "order:"+cl.Subject)
	}))
}

// With a Pinger, a check that fails (this process short of
// connections, a local deadline, anything) never opens an open gate
// while the ping answers: requests without a pass go to the waiting room,
// a pass that verifies offline passes as in closed mode. Only a failed
// ping opens it, and an answered one closes it again.
func TestOpenGateGoesByThePing(t *testing.T) {
	t.Parallel()
	for _, checkErr := range []error{
		fmt.Errorf("%w: redis: connection pool timeout", gate.ErrBusy),
		context.DeadlineExceeded,
		errors.New("read tcp 10.0.0.1:6379: i/o timeout"),
	} {
		t.Run(checkErr.Error(), func(t *testing.T) {
			t.Parallel()
			c := pingingStub{newStub(checkErr, nil)}
			h := openGate(t, c)
			deadline := time.Now().Add(30 * time.Second)
			for n := 0; c.pings.Load() < 3; n++ {
				if got := ask(h, ""); got != "waiting" {
					t.Fatalf("request %d without a pass, the ping answering: %s", n, got)
				}
				if got := ask(h, "good"); got != "order:holder" {
					t.Fatalf("a pass that verifies offline, its check failing: %s", got)
				}
				if got := ask(h, "forged"); got != "refused" {
					t.Fatalf("a pass that does not verify: %s", got)
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d pings in 30 s", c.pings.Load())
				}
			}
			down := errors.New("dial tcp 10.0.0.1:6379: connect: connection refused")
			c.pingErr.Store(&down)
			eventuallyGot(t, h, "", "order:")
			var answers error
			c.pingErr.Store(&answers)
			eventuallyGot(t, h, "", "waiting")
		})
	}
}

// Without a Pinger the gate learns from the checks, but an error wrapping
// ErrBusy never makes the waiting room away; any other does.
func TestOpenGateIgnoresBusyChecks(t *testing.T) {
	t.Parallel()
	busy := fmt.Errorf("%w: pool timeout", gate.ErrBusy)
	c := newStub(busy, nil)
	h := openGate(t, c)
	for n := range 50 {
		if got := ask(h, "good"); got != "order:holder" {
			t.Fatalf("check %d busy, a pass that verifies offline: %s", n, got)
		}
		if got := ask(h, ""); got != "waiting" {
			t.Fatalf("check %d busy, no pass: %s", n, got)
		}
	}
	down := errors.New("verify: 503")
	c.checkErr.Store(&down)
	if got := ask(h, "good"); got != "order:holder" {
		t.Fatalf("check failed, a pass that verifies offline: %s", got)
	}
	if got := ask(h, ""); got != "order:" {
		t.Fatalf("check failed (the waiting room away), no pass: %s", got)
	}
}

// eventuallyGot asks until the answer to pass is want, for up to 30 s.
func eventuallyGot(t *testing.T, h http.Handler, pass, want string) {
	t.Helper()
	wait.For(t, 30*time.Second, "the answer "+want, func() (bool, string) {
		got := ask(h, pass)
		return got == want, got
	})
}
