package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/client"
)

// What a broken or hostile service (or a proxy in front of it) answers
// must neither panic the client nor make it spin: every call ends after
// a bounded number of sends, every wait is bounded, every body is read
// up to a limit.

// fakeService answers every call with one canned answer, without a
// network, and counts the calls by method and path's last segment.
type fakeService struct {
	mu     sync.Mutex
	status int // of every answer
	header http.Header
	body   func(r *http.Request) []byte
	calls  map[string]int
	total  int
}

func (f *fakeService) RoundTrip(r *http.Request) (*http.Response, error) {
	f.mu.Lock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	op := r.Method + " " + r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	f.calls[op]++
	f.total++
	f.mu.Unlock()
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: f.status, Header: f.header.Clone(), Body: io.NopCloser(bytes.NewReader(f.body(r))), Request: r}, nil
}

func (f *fakeService) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

// fakeClient is a Client of f, with a clock that never waits and a
// saved place, so that every call can be made.
func fakeClient(t testing.TB, rt http.RoundTripper, o client.Options) (*client.Client, *testClock) {
	t.Helper()
	o.BaseURL, o.Queue = "http://waitroom.fake", "q"
	o.HTTPClient = &http.Client{Transport: rt}
	if o.Place == nil {
		o.Place = &client.Place{Queue: "q", Token: "v2.q.token"}
	}
	c, err := client.New(o)
	if err != nil {
		t.Fatal(err)
	}
	clk := newTestClock(false)
	client.SetClock(c, clk.Now, clk.Sleep)
	return c, clk
}

func fixed(b string) func(*http.Request) []byte {
	return func(*http.Request) []byte { return []byte(b) }
}

// Every code of the queue API maps to its Err value, and to no other.
func TestEveryCode(t *testing.T) {
	t.Parallel()
	codes := []struct {
		want   *client.Error
		status int
	}{
		{client.ErrChallengeRequired, 403}, {client.ErrHumanCheckRequired, 403}, {client.ErrHumanCheckFailed, 403},
		{client.ErrNotOpen, 403}, {client.ErrQueueFull, 503}, {client.ErrRateLimited, 429}, {client.ErrUnavailable, 503},
		{client.ErrQueueNotFound, 404}, {client.ErrInvalidPlace, 401}, {client.ErrPlaceMoved, 401},
		{client.ErrInvalidHandoff, 400}, {client.ErrNotWaiting, 409}, {client.ErrPlaceInOtherLine, 409},
		{client.ErrInvalidJoinToken, 400}, {client.ErrInvalidPass, 401}, {client.ErrCrossSite, 403}, {client.ErrInvalidJSON, 400},
	}
	for _, tc := range codes {
		t.Run(tc.want.Code, func(t *testing.T) {
			f := &fakeService{status: tc.status, header: http.Header{"Retry-After": {"7"}},
				body: fixed(`{"error":{"code":"` + tc.want.Code + `","message":"m","difficulty":9,"provider":"turnstile","sitekey":"sk",` +
					`"script_url":"https://x.example/api.js","lane":"","opens_at":"2030-01-02T03:04:05Z","prequeue_from":"2030-01-02T02:04:05Z"}}`)}
			c, _ := fakeClient(t, f, client.Options{MaxAttempts: 1})
			_, err := c.Status(context.Background())
			var e *client.Error
			if !errors.Is(err, tc.want) || !errors.As(err, &e) {
				t.Fatalf("%v, want %s", err, tc.want.Code)
			}
			for _, other := range codes {
				if other.want != tc.want && errors.Is(err, other.want) {
					t.Errorf("%s also matches %s", tc.want.Code, other.want.Code)
				}
			}
			if e.StatusCode != tc.status || e.Difficulty != 9 || e.Provider != "turnstile" || e.SiteKey != "sk" || e.RetryAfter != 7*time.Second ||
				e.OpensAt.Year() != 2030 || e.PrequeueFrom.IsZero() {
				t.Fatalf("details %+v", e)
			}
		})
	}
}

func TestBrokenAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("a body over the limit", func(t *testing.T) {
		t.Parallel()
		huge := bytes.Repeat([]byte(" "), 10<<20)
		f := &fakeService{status: 200, body: func(*http.Request) []byte { return huge }}
		c, _ := fakeClient(t, f, client.Options{})
		if _, err := c.Status(ctx); !errors.Is(err, client.ErrBadAnswer) || f.total != 1 {
			t.Fatalf("%v after %d sends, want ErrBadAnswer after 1", err, f.total)
		}
	})
	for name, body := range map[string]string{
		"not JSON":               `<html>hello</html>`,
		"unknown status":         `{"queue":"q","status":"MAYBE"}`,
		"admitted without pass":  `{"queue":"q","status":"ENTERED"}`,
		"another queue's ticket": `{"queue":"other","status":"WAITING"}`,
		"wrong types":            `{"queue":1,"status":["WAITING"]}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fakeService{status: 200, body: fixed(body)}
			c, _ := fakeClient(t, f, client.Options{})
			if _, err := c.Status(ctx); !errors.Is(err, client.ErrBadAnswer) || f.total != 1 {
				t.Fatalf("%v after %d sends, want ErrBadAnswer after 1", err, f.total)
			}
		})
	}
	t.Run("an enter without a place token", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{status: 200, body: fixed(`{"queue":"q","status":"WAITING","position":1}`)}
		c, _ := fakeClient(t, f, client.Options{})
		if _, err := c.Enter(ctx, client.EnterOptions{}); !errors.Is(err, client.ErrBadAnswer) {
			t.Fatal(err)
		}
	})
	t.Run("busy for ever, asking for a year", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{status: 503, header: http.Header{"Retry-After": {"31536000"}}, body: fixed(`not json`)}
		c, clk := fakeClient(t, f, client.Options{MaxAttempts: 4})
		_, err := c.Status(ctx)
		var e *client.Error
		if !errors.As(err, &e) || e.StatusCode != 503 || f.total != 4 {
			t.Fatalf("%v after %d sends, want a 503 after 4", err, f.total)
		}
		for _, d := range clk.Sleeps() {
			if d > 10*time.Minute {
				t.Fatalf("slept %s", d)
			}
		}
	})
	t.Run("poll now, for ever", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{status: 200, body: fixed(`{"queue":"q","status":"WAITING","position":1,"poll_after_ms":0}`)}
		c, clk := fakeClient(t, f, client.Options{MinPoll: 2 * time.Second})
		ctx, cancel := context.WithCancel(ctx)
		clk.onSleep = func(n int, _ time.Duration) {
			if n == 5 {
				cancel()
			}
		}
		if _, err := c.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		for _, d := range clk.Sleeps() {
			if d != 2*time.Second {
				t.Fatalf("slept %v, want MinPoll each time", clk.Sleeps())
			}
		}
		if got := f.count("GET status"); got != 5 { // one at once (a restored place), then one after each sleep but the cancelled one
			t.Fatalf("%d statuses for 5 sleeps", got)
		}
	})
	t.Run("poll in a century", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{status: 200, body: fixed(`{"queue":"q","status":"WAITING","position":1,"poll_after_ms":3153600000000}`)}
		c, clk := fakeClient(t, f, client.Options{})
		ctx, cancel := context.WithCancel(ctx)
		clk.onSleep = func(int, time.Duration) { cancel() }
		_, _ = c.Status(ctx)
		if _, err := c.Wait(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if s := clk.Sleeps(); len(s) != 1 || s[0] != 10*time.Minute {
			t.Fatalf("slept %v, want the 10 minutes' cap", s)
		}
	})
	t.Run("challenges for ever", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{body: func(r *http.Request) []byte {
			if strings.HasSuffix(r.URL.Path, "/challenge") {
				return []byte(`{"challenge":"c1.q.1.x.y.z","difficulty":1}`)
			}
			return []byte(`{"error":{"code":"challenge_required"}}`)
		}}
		c, _ := fakeClient(t, &statusByPath{f}, client.Options{})
		if _, err := c.Enter(ctx, client.EnterOptions{}); !errors.Is(err, client.ErrChallengeRequired) {
			t.Fatal(err)
		}
		if e, ch := f.count("POST enter"), f.count("GET challenge"); e != 4 || ch != 3 {
			t.Fatalf("%d enters and %d challenges, want 4 and 3", e, ch)
		}
	})
	t.Run("a challenge no one can pay", func(t *testing.T) {
		t.Parallel()
		f := &fakeService{body: func(r *http.Request) []byte {
			if strings.HasSuffix(r.URL.Path, "/challenge") {
				return []byte(`{"challenge":"c1.q.1.x.y.z","difficulty":200}`)
			}
			return []byte(`{"error":{"code":"challenge_required"}}`)
		}}
		c, _ := fakeClient(t, &statusByPath{f}, client.Options{})
		if _, err := c.Enter(ctx, client.EnterOptions{}); !errors.Is(err, client.ErrBadAnswer) {
			t.Fatal(err)
		}
	})
}

// statusByPath answers f's bodies with 200 for a challenge and 403
// otherwise.
type statusByPath struct{ f *fakeService }

func (s *statusByPath) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := s.f.RoundTrip(r)
	if err == nil {
		resp.StatusCode = 403
		if strings.HasSuffix(r.URL.Path, "/challenge") {
			resp.StatusCode = 200
		}
	}
	return resp, err
}

// FuzzAnswers: whatever one answer a service gives to every call, each
// of the client's calls ends, after a bounded number of sends and
// bounded waits, without a panic.
func FuzzAnswers(f *testing.F) {
	f.Add(200, "", []byte(`{"queue":"q","status":"WAITING","position":3,"poll_after_ms":0,"place_token":"v2.q.t"}`))
	f.Add(200, "", []byte(`{"queue":"q","status":"ENTERED","pass":"a.eyJleHAiOjE5MDAwMDAwMDB9.c","place_token":"v2.q.t"}`))
	f.Add(200, "", []byte(`{"queue":"q","status":"NOT_WAITING","reason":"left"}`))
	f.Add(201, "", []byte(`{"token":"t","code":"ABCD-EFGH","expires_at":"2030-01-01T00:00:00Z","path":"/q/q?handoff=t"}`))
	f.Add(200, "", []byte(`{"challenge":"c1.q.2.x.y.z","difficulty":2,"expires_at":"x"}`))
	f.Add(403, "", []byte(`{"error":{"code":"challenge_required","difficulty":4}}`))
	f.Add(429, "1", []byte(`{"error":{"code":"rate_limited","retry_at":"2026-01-01T00:00:09Z"}}`))
	f.Add(503, "Wed, 21 Oct 2015 07:28:00 GMT", []byte(`{"error":{"code":"unavailable"}}`))
	f.Add(401, "-3", []byte(`{"error":{"code":"place_moved"}}`))
	f.Add(502, "", []byte(`<html>bad gateway</html>`))
	f.Add(204, "", []byte(nil))
	f.Fuzz(func(t *testing.T, status int, retry string, body []byte) {
		if status < 200 || status > 599 || status >= 300 && status < 400 {
			status = 200 + (status%400+400)%400
			if status >= 300 && status < 400 {
				status += 100
			}
		}
		svc := &fakeService{status: status, header: http.Header{"Retry-After": {retry}}, body: func(*http.Request) []byte { return body }}
		c, clk := fakeClient(t, svc, client.Options{MaxAttempts: 3})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		clk.onSleep = func(n int, _ time.Duration) {
			if n >= 40 {
				cancel()
			}
		}
		_, _ = c.Enter(ctx, client.EnterOptions{})
		_, _ = c.Status(ctx)
		_, _ = c.Handoff(ctx)
		_ = c.Done(ctx, "a.b.c")
		_, _ = c.Wait(ctx, func(client.Ticket) {})
		_ = c.Leave(ctx)
		// Enter: 4 enters and 3 challenges of 3 sends each; Status,
		// Handoff, Done, Leave: 3 each; Wait: until the 40th sleep.
		if svc.total > 21+12+3*41 {
			t.Fatalf("%d sends", svc.total)
		}
		for _, d := range clk.Sleeps() {
			if d < 0 || d > 10*time.Minute {
				t.Fatalf("slept %s", d)
			}
		}
	})
}

// An enter answered 503 may have made the place, and sets its credential
// as a cookie all the same: the client sends it with the next enter, so
// the service keeps that member instead of making a second one.
func TestEnterKeepsTheCredentialOfA503(t *testing.T) {
	t.Parallel()
	var (
		mu    sync.Mutex
		auths []string
	)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		n := len(auths)
		mu.Unlock()
		if n == 1 {
			h := http.Header{"Retry-After": {"1"}, "Set-Cookie": {"__Host-wr_place_q=v2.q.made; Path=/; Max-Age=86400; HttpOnly; Secure; SameSite=Lax"}}
			return &http.Response{StatusCode: 503, Header: h, Body: io.NopCloser(strings.NewReader(`{"error":{"code":"unavailable"}}`)), Request: r}, nil
		}
		return &http.Response{StatusCode: 200, Header: http.Header{}, Request: r,
			Body: io.NopCloser(strings.NewReader(`{"queue":"q","user_id":"a:1","status":"WAITING","position":4,"poll_after_ms":900,"place_token":"v2.q.made2"}`))}, nil
	})
	var told []client.Place
	c, err := client.New(client.Options{BaseURL: "http://waitroom.fake", Queue: "q", HTTPClient: &http.Client{Transport: rt},
		OnPlace: func(p client.Place) { told = append(told, p) }})
	if err != nil {
		t.Fatal(err)
	}
	clk := newTestClock(false)
	client.SetClock(c, clk.Now, clk.Sleep)
	tk, err := c.Enter(context.Background(), client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(auths) != 2 || auths[0] != "" || auths[1] != "Bearer v2.q.made" {
		t.Fatalf("enters sent %q, want none then the 503's credential", auths)
	}
	if p, _ := c.Place(); p.Token != "v2.q.made2" || p.Member != "a:1" || tk.Position != 4 {
		t.Fatalf("place %+v, ticket %+v", p, tk)
	}
	if len(told) != 2 || told[0].Token != "v2.q.made" || told[1].Token != "v2.q.made2" {
		t.Fatalf("OnPlace told %+v", told)
	}
	if s := clk.Sleeps(); len(s) != 1 || s[0] < time.Second {
		t.Fatalf("slept %v before entering again, want Retry-After's second", s)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
