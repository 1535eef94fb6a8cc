package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
)

// The whole flow against a real waitroom that asks for proof of work and
// admits one person every 300 ms: enter (refused, challenge, solved,
// entered), wait as told until admitted, the pass checks at the order
// page, done ends the admission.
func TestFlow(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOptions{ticks: true, settings: queue.Settings{
		RefillSize: 1, RefillInterval: 300 * time.Millisecond, SessionTTL: time.Hour}})
	// Paused while the line forms, so that nobody is admitted before the
	// client has its place, however slow the machine.
	s.admin("PATCH", "", `{"challenge_difficulty":8,"paused":true}`)
	s.fill(1) // someone ahead in line
	c := s.client(client.Options{})
	// A bound on a broken run, not a claim about how fast it is.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	entered, err := c.Enter(ctx, client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if entered.Status != client.Waiting || entered.Position != 2 || entered.PollAfter <= 0 {
		t.Fatalf("enter: %+v, want the second place in line", entered)
	}
	if got := s.calls.get("POST enter 403"); got != 2 { // the other's and ours: each paid
		t.Errorf("enters refused challenge_required: %d, want 2", got)
	}
	if got := s.calls.get("GET challenge"); got != 2 {
		t.Errorf("challenges: %d, want 2", got)
	}
	s.admin("PATCH", "", `{"paused":false}`)
	p, ok := c.Place()
	if !ok || p.Queue != s.queue || p.Member != entered.Member || p.Token == "" {
		t.Fatalf("place %+v %t after enter %+v", p, ok, entered)
	}
	var seen []client.Ticket
	admitted, err := c.Wait(ctx, func(t client.Ticket) { seen = append(seen, t) })
	if err != nil {
		t.Fatal(err)
	}
	if admitted.Status != client.Entered || admitted.Pass == "" || admitted.Member != entered.Member {
		t.Fatalf("wait: %+v", admitted)
	}
	if len(seen) == 0 || seen[len(seen)-1].Status != client.Entered {
		t.Fatalf("observed %+v", seen)
	}
	if exp := admitted.PassExpires; exp.Before(time.Now()) || exp.After(time.Now().Add(2*time.Hour)) {
		t.Errorf("pass expires %s, want within the session's hour", exp)
	}
	if code := s.verify(admitted.Pass); code != http.StatusOK {
		t.Fatalf("the order page's check of the pass: %d", code)
	}
	if err := c.Done(ctx, admitted.Pass); err != nil {
		t.Fatal(err)
	}
	if code := s.verify(admitted.Pass); code != http.StatusUnauthorized {
		t.Fatalf("the pass after done: %d, want 401", code)
	}
	if err := c.Done(ctx, admitted.Pass); err != nil { // done already: done
		t.Fatalf("done again: %v", err)
	}
	if got := s.calls.get("POST enter"); got != 4 {
		t.Errorf("enters: %d, want 4 (each refused once, then paid)", got)
	}
}

// An app that restarts keeps its place: the Place it saved (as JSON)
// restores the client, which asks the status of the same place without
// entering again; leaving forgets it.
func TestRestoreFromSavedPlace(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOptions{settings: hourly})
	s.fill(2)
	var saved []byte
	first := s.client(client.Options{OnPlace: func(p client.Place) {
		var err error
		if saved, err = json.Marshal(p); err != nil {
			t.Error(err)
		}
	}})
	ctx := context.Background()
	before, err := first.Enter(ctx, client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if saved == nil {
		t.Fatal("OnPlace was not told of the new place")
	}

	var p client.Place
	if err := json.Unmarshal(saved, &p); err != nil {
		t.Fatal(err)
	}
	enters := s.calls.get("POST enter")
	var now client.Place
	again := s.client(client.Options{Place: &p, OnPlace: func(p client.Place) { now = p }})
	after, err := again.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != client.Waiting || after.Member != before.Member || after.Position != before.Position {
		t.Fatalf("restored: %+v, want the place %+v", after, before)
	}
	if got := s.calls.get("POST enter"); got != enters {
		t.Fatalf("restoring entered again (%d enters, want %d)", got, enters)
	}
	if err := again.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	if _, held := again.Place(); held || now != (client.Place{}) {
		t.Fatalf("after leave the client holds a place, or OnPlace was not told (%+v)", now)
	}
	if _, err := first.Status(ctx); err != nil { // the old copy's credential still proves the member
		t.Fatal(err)
	}
	if _, err := again.Wait(ctx, nil); !errors.Is(err, client.ErrNoPlace) {
		t.Fatalf("wait without a place: %v", err)
	}
}

// Wait asks when the answers say and never sooner: while the client
// sleeps, the server has seen exactly one status per sleep before it,
// and each sleep is the poll_after_ms of the answer before it (the
// clock is the test's, so no wall-clock time is measured). Cancelling
// the context during a sleep ends Wait with the context's error and no
// further call.
func TestWaitPacing(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: 20 * time.Second, SessionTTL: time.Hour}})
	s.fill(2)
	clk := newTestClock(true)
	c := s.client(client.Options{})
	client.SetClock(c, clk.Now, clk.Sleep)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered, err := c.Enter(ctx, client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = []client.Ticket{entered}
	)
	done := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, func(t client.Ticket) { mu.Lock(); seen = append(seen, t); mu.Unlock() })
		done <- err
	}()
	for k := 1; k <= 4; k++ {
		var d time.Duration
		select {
		case d = <-clk.gate:
		case err := <-done:
			t.Fatalf("wait ended before sleep %d: %v", k, err)
		case <-time.After(2 * time.Minute): // a bound on a broken run
			t.Fatalf("no sleep %d", k)
		}
		mu.Lock()
		last := seen[len(seen)-1]
		n := len(seen)
		mu.Unlock()
		if got := s.calls.get("GET status"); got != k-1 || n != k {
			t.Fatalf("sleep %d: the server saw %d statuses (the client %d tickets), want %d", k, got, n, k-1)
		}
		if last.Status != client.Waiting || last.PollAfter < time.Second {
			t.Fatalf("ticket %d: %+v", k, last)
		}
		if want := max(last.PollAfter, client.DefaultMinPoll); d != want {
			t.Fatalf("sleep %d: %s, want the answer's poll_after %s", k, d, want)
		}
		if k == 4 {
			cancel()
			break
		}
		clk.resume <- struct{}{}
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("wait after cancel: %v", err)
	}
	if got := s.calls.get("GET status"); got != 3 {
		t.Fatalf("statuses after cancel: %d, want 3", got)
	}
}

// Cancelling the context ends a real wait at once: Wait sleeps until the
// enter's poll_after_ms, and returns when the context ends, without a
// status call.
func TestWaitCancel(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOptions{settings: hourly})
	s.fill(2)
	c := s.client(client.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := c.Enter(ctx, client.EnterOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Wait(ctx, nil); done <- err }()
	cancel()
	var err error
	wait.For(t, 10*time.Second, "Wait to end", func() (bool, string) {
		select {
		case err = <-done:
			return true, ""
		default:
			return false, "still waiting"
		}
	})
	if !errors.Is(err, context.Canceled) || s.calls.get("GET status") != 0 {
		t.Fatalf("wait: %v after %d statuses, want context.Canceled and none", err, s.calls.get("GET status"))
	}
	// An enter with a dead context sends nothing.
	if _, err := s.client(client.Options{}).Enter(ctx, client.EnterOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("enter with a cancelled context: %v", err)
	}
}

// A place moves to another device: the laptop makes a hand-over, the
// phone enters with its code and holds the same member at the same
// position; the laptop's next call answers ErrPlaceMoved, and the
// laptop forgets the place (and tells OnPlace).
func TestHandoff(t *testing.T) {
	t.Parallel()
	s := newServer(t, serverOptions{settings: hourly})
	s.fill(2)
	ctx := context.Background()
	var laptopPlace client.Place
	laptop := s.client(client.Options{OnPlace: func(p client.Place) { laptopPlace = p }})
	before, err := laptop.Enter(ctx, client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := laptop.Handoff(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h.Code == "" || h.Token == "" || h.ExpiresAt.IsZero() || h.Path == "" {
		t.Fatalf("hand-over %+v", h)
	}
	phone := s.client(client.Options{})
	moved, err := phone.Enter(ctx, client.EnterOptions{Handoff: h.Code})
	if err != nil {
		t.Fatal(err)
	}
	if moved.Member != before.Member || moved.Position != before.Position || moved.Status != client.Waiting {
		t.Fatalf("on the phone: %+v, want the laptop's place %+v", moved, before)
	}
	if _, err := laptop.Status(ctx); !errors.Is(err, client.ErrPlaceMoved) {
		t.Fatalf("the laptop's status after the move: %v", err)
	}
	if _, held := laptop.Place(); held || laptopPlace != (client.Place{}) {
		t.Fatalf("the laptop still holds %+v", laptopPlace)
	}
	if _, err := phone.Enter(ctx, client.EnterOptions{Handoff: h.Code}); !errors.Is(err, client.ErrInvalidHandoff) {
		t.Fatalf("a used hand-over: %v", err)
	}
	if st, err := phone.Status(ctx); err != nil || st.Member != before.Member {
		t.Fatalf("the phone's status: %+v %v", st, err)
	}
}

// Each refusal the queue API answers comes back as its typed error, with
// what an app needs to act on it.
func TestTypedErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	asError := func(t *testing.T, err error, want *client.Error) *client.Error {
		t.Helper()
		var e *client.Error
		if !errors.Is(err, want) || !errors.As(err, &e) {
			t.Fatalf("error %v, want %s", err, want.Code)
		}
		return e
	}

	t.Run("too much work", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: hourly})
		s.admin("PATCH", "", `{"challenge_difficulty":12}`)
		_, err := s.client(client.Options{MaxDifficulty: 8}).Enter(ctx, client.EnterOptions{})
		if !errors.Is(err, client.ErrTooHard) {
			t.Fatalf("%v, want ErrTooHard", err)
		}
		if e := asError(t, err, client.ErrChallengeRequired); e.Difficulty != 12 {
			t.Fatalf("difficulty %d, want 12", e.Difficulty)
		}
	})
	t.Run("human check", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: hourly, human: true})
		s.admin("PATCH", "", `{"human_check":"always"}`)
		c := s.client(client.Options{})
		_, err := c.Enter(ctx, client.EnterOptions{})
		e := asError(t, err, client.ErrHumanCheckRequired)
		if e.Provider != "turnstile" || e.SiteKey != humanchecktest.SiteKey || e.ScriptURL == "" {
			t.Fatalf("the widget to show: %+v", e)
		}
		s.human.SetMode(humanchecktest.Refuse)
		_, err = c.Enter(ctx, client.EnterOptions{HumanToken: s.human.Issue()})
		asError(t, err, client.ErrHumanCheckFailed)
		s.human.SetMode(humanchecktest.Accept)
		if tk, err := c.Enter(ctx, client.EnterOptions{HumanToken: s.human.Issue()}); err != nil || tk.Status != client.Entered {
			t.Fatalf("with the widget's token: %+v %v", tk, err)
		}
	})
	t.Run("not open", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: hourly})
		now := time.Now().UTC()
		s.admin("PATCH", "", `{"opens_at":"`+now.Add(2*time.Hour).Format(time.RFC3339)+`","prequeue_from":"`+now.Add(time.Hour).Format(time.RFC3339)+`"}`)
		_, err := s.client(client.Options{}).Enter(ctx, client.EnterOptions{})
		if e := asError(t, err, client.ErrNotOpen); e.PrequeueFrom.Before(now) || e.OpensAt.Before(e.PrequeueFrom) {
			t.Fatalf("times %+v", e)
		}
	})
	t.Run("queue full", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: hourly})
		s.admin("PATCH", "", `{"max_waiting":1}`)
		s.fill(2)
		clk := newTestClock(false)
		c := s.client(client.Options{MaxAttempts: 2})
		client.SetClock(c, clk.Now, clk.Sleep)
		_, err := c.Enter(ctx, client.EnterOptions{})
		if e := asError(t, err, client.ErrQueueFull); e.RetryAfter <= 0 || e.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("queue_full: %+v", e)
		}
		if got := s.calls.get("POST enter 503"); got != 2 || len(clk.Sleeps()) != 1 {
			t.Fatalf("%d enters refused, %d sleeps; want 2 and 1 (MaxAttempts)", got, len(clk.Sleeps()))
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour,
			Limits: queue.Limits{StatusPerPlace: queue.Limit{Rate: 0.01, Burst: 1}}}})
		s.fill(1)
		clk := newTestClock(false)
		c := s.client(client.Options{MaxAttempts: 3})
		client.SetClock(c, clk.Now, clk.Sleep)
		if _, err := c.Enter(ctx, client.EnterOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := c.Status(ctx)
		e := asError(t, err, client.ErrRateLimited)
		sleeps := clk.Sleeps()
		if len(sleeps) != 2 || s.calls.get("GET status 429") != 3 {
			t.Fatalf("%d sleeps, %d refusals; want 2 and 3", len(sleeps), s.calls.get("GET status 429"))
		}
		for _, d := range sleeps {
			if d < e.RetryAfter || d < time.Second {
				t.Fatalf("slept %s before sending again, under Retry-After %s", d, e.RetryAfter)
			}
		}
	})
	t.Run("refusals", func(t *testing.T) {
		t.Parallel()
		s := newServer(t, serverOptions{settings: hourly})
		admitted := s.client(client.Options{})
		tk, err := admitted.Enter(ctx, client.EnterOptions{})
		if err != nil || tk.Status != client.Entered {
			t.Fatalf("%+v %v", tk, err)
		}
		_, err = admitted.Handoff(ctx)
		asError(t, err, client.ErrNotWaiting)
		_, err = s.client(client.Options{Queue: "no-such-queue"}).Enter(ctx, client.EnterOptions{})
		asError(t, err, client.ErrQueueNotFound)
		forged := s.client(client.Options{Place: &client.Place{Queue: s.queue, Token: "v2.forged"}})
		_, err = forged.Status(ctx)
		asError(t, err, client.ErrInvalidPlace)
		if _, held := forged.Place(); held {
			t.Fatal("the client kept a credential the service refused as invalid_place")
		}
		if tk, err := forged.Enter(ctx, client.EnterOptions{}); err != nil || tk.Status != client.Waiting {
			t.Fatalf("entering afresh after invalid_place: %+v %v", tk, err)
		}
		forged.Forget()
		if _, held := forged.Place(); held {
			t.Fatal("Forget kept the place")
		}
		_, err = s.client(client.Options{}).Enter(ctx, client.EnterOptions{Handoff: "ABCD-EFGH"})
		asError(t, err, client.ErrInvalidHandoff)
		_, err = s.client(client.Options{}).Enter(ctx, client.EnterOptions{JoinToken: "eyJ.forged.token"})
		asError(t, err, client.ErrInvalidJoinToken)
		asError(t, admitted.Done(ctx, "not-a-pass"), client.ErrInvalidPass)
		if err := admitted.Done(ctx, ""); !errors.Is(err, client.ErrInvalidPass) {
			t.Fatalf("done without a pass: %v", err)
		}
		if _, err := s.client(client.Options{}).Status(ctx); !errors.Is(err, client.ErrNoPlace) {
			t.Fatalf("status without a place: %v", err)
		}
	})
}

// Redis goes away: the service answers 503 unavailable, and the client
// sends again after Retry-After and a backoff that grows, then carries
// on once Redis is back; with Redis away for good it gives up after
// MaxAttempts sends.
func TestDeadRedis(t *testing.T) {
	t.Parallel()
	proxy := newRedisProxy(t, redistest.Addr(t))
	rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { rdb.Close() })
	s := newServer(t, serverOptions{settings: hourly, rdb: rdb, timeout: time.Second})
	s.fill(1)
	clk := newTestClock(false)
	c := s.client(client.Options{Backoff: 2 * time.Second, MaxBackoff: 8 * time.Second, MaxAttempts: 4})
	client.SetClock(c, clk.Now, clk.Sleep)
	ctx := context.Background()
	before, err := c.Enter(ctx, client.EnterOptions{})
	if err != nil {
		t.Fatal(err)
	}

	proxy.setDown(true)
	clk.onSleep = func(n int, _ time.Duration) {
		if n == 2 {
			proxy.setDown(false) // back before the third send
		}
	}
	after, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if after.Member != before.Member || after.Status != client.Waiting {
		t.Fatalf("after the outage: %+v, want %+v", after, before)
	}
	sleeps := clk.Sleeps()
	if got := s.calls.get("GET status 503"); got != 2 || len(sleeps) != 2 || s.calls.get("GET status 200") != 1 {
		t.Fatalf("%d statuses answered 503 and %d sleeps; want 2 and 2, then one answered", got, len(sleeps))
	}
	// Retry-After is 1 s; the backoff: 1–2 s, then 2–4 s.
	if sleeps[0] < time.Second || sleeps[0] > 2*time.Second || sleeps[1] < 2*time.Second || sleeps[1] > 4*time.Second {
		t.Fatalf("slept %v, want 1–2 s then 2–4 s", sleeps)
	}

	clk.onSleep = nil
	proxy.setDown(true)
	_, err = c.Status(ctx)
	if !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("with Redis away: %v, want ErrUnavailable", err)
	}
	if got := s.calls.get("GET status 503"); got != 2+4 {
		t.Fatalf("statuses answered 503: %d, want 2 + MaxAttempts (4)", got)
	}
	if _, held := c.Place(); !held {
		t.Fatal("the client dropped its place over an outage")
	}
}

// The solver's nonces check with the service's own check, and a
// cancelled context stops a solve that would take hours.
func TestSolve(t *testing.T) {
	t.Parallel()
	for _, d := range []int{0, 1, 8, 12} {
		ch := "c1.q.x." + string(rune('a'+d))
		nonce, err := client.Solve(context.Background(), ch, d)
		if err != nil || challenge.LeadingZeroBits(ch, nonce) < d {
			t.Fatalf("difficulty %d: nonce %q (%v) has %d zero bits", d, nonce, err, challenge.LeadingZeroBits(ch, nonce))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := client.Solve(ctx, "c1.hard", 32); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled solve: %v", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	good := client.Options{BaseURL: "https://wait.example/prefix/", Queue: "sale"}
	if _, err := client.New(good); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*client.Options){
		"no base":        func(o *client.Options) { o.BaseURL = "" },
		"not http":       func(o *client.Options) { o.BaseURL = "ftp://wait.example" },
		"query":          func(o *client.Options) { o.BaseURL = "https://wait.example/?x=1" },
		"user info":      func(o *client.Options) { o.BaseURL = "https://me:pw@wait.example" },
		"no queue":       func(o *client.Options) { o.Queue = "" },
		"queue path":     func(o *client.Options) { o.Queue = "a/b" },
		"negative":       func(o *client.Options) { o.MaxAttempts = -1 },
		"too hard":       func(o *client.Options) { o.MaxDifficulty = 33 },
		"backoff":        func(o *client.Options) { o.Backoff, o.MaxBackoff = time.Minute, time.Second },
		"place of other": func(o *client.Options) { o.Place = &client.Place{Queue: "other", Token: "t"} },
		"place no token": func(o *client.Options) { o.Place = &client.Place{Queue: "sale"} },
	} {
		o := good
		edit(&o)
		if _, err := client.New(o); err == nil {
			t.Errorf("%s: New accepted %+v", name, o)
		}
	}
}
