package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/command"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// The order page speaks back: Waitroom-Command in its answers, through the
// reverse-proxy gate and the Go middleware, and the commands endpoint.

// counted records what a command.Runner counts.
type counted struct {
	mu sync.Mutex
	n  map[string]int // "queue command result"
}

func (c *counted) count(q, cmd, result string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[q+" "+cmd+" "+result]++
}

func (c *counted) get(q, cmd, result string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[q+" "+cmd+" "+result]
}

// commandUpstream answers /cmd/{value} and /static/cmd/{value} with
// Waitroom-Command: {value}, anything else plainly.
func commandUpstream(t testing.TB) *url.URL {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, v, ok := strings.Cut(r.URL.Path, "/cmd/"); ok {
			w.Header().Set(gate.HeaderCommand, v)
		}
		fmt.Fprint(w, "order page")
	}))
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	return u
}

// newCommandEnv is a waitroom in gate mode in front of commandUpstream,
// with sliding sessions (a 10-minute TTL, 30 at most), whose commands
// are counted in the returned record.
func newCommandEnv(t *testing.T) (*env, *counted) {
	t.Helper()
	return newCommandEnvFor(t, commandUpstream(t), 2)
}

// admittedPassToExtend is admittedPass once the Redis clock has passed
// the admission's millisecond: an extend in that same millisecond finds
// the admission already ending as late as it can (unchanged), which a
// fast local Redis made these tests see.
func (e *env) admittedPassToExtend(t *testing.T) publicapi.TicketResponse {
	t.Helper()
	tk := e.admittedPass()
	at, err := e.rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	wait.For(t, 5*time.Second, "the Redis clock past the admission", func() (bool, string) {
		now, err := e.rdb.Time(context.Background()).Result()
		if err != nil {
			return false, err.Error()
		}
		return now.UnixMilli() > at.UnixMilli(), now.String()
	})
	return tk
}

// newCommandEnvFor is newCommandEnv in front of upstream, admitting
// refill people at once.
func newCommandEnvFor(t testing.TB, upstream *url.URL, refill int) (*env, *counted) {
	t.Helper()
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	name := fmt.Sprintf("c%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: refill, RefillInterval: time.Hour,
		SessionTTL: 10 * time.Minute, SessionMax: 30 * time.Minute}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	auditLog, _ := audit.New(rdb)
	rec := &counted{n: map[string]int{}}
	cmds, err := command.New(command.Options{Store: store, Passes: passes.Verifier, Audit: auditLog, Count: rec.count, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	uses, _ := passledger.New(rdb, passledger.DefaultMaxClients, testTimeout)
	g, err := proxy.NewGate(context.Background(), proxy.GateOptions{Queue: name, Passes: passes, Admissions: store,
		Bypass: []string{"/static/"}, InsecureCookie: true, Uses: uses, Commands: cmds,
		Revoke: func(context.Context, string, string) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWithStore(t, rdb, store, name, Options{Places: places, Passes: passes, Gate: g, Commands: cmds,
		ClientIP: behindProxy(t), Upstream: upstreamProxy(upstream, 5*time.Second, log, nil)})
	return e, rec
}

// originEntries are the audit log's entries of the order page's commands.
func originEntries(t *testing.T, e *env) []audit.Entry {
	t.Helper()
	l, _ := audit.New(e.rdb)
	all, err := l.List(context.Background(), e.queue, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []audit.Entry
	for _, en := range all {
		if en.Actor != nil && en.Actor.Kind == actor.KindOrigin {
			out = append(out, en)
		}
	}
	return out
}

// Through the reverse-proxy gate: the command never reaches the client;
// done ends the admission of the pass the request came with and is
// audited and counted; extend renews it; a command in the answer to a
// request without a pass (a bypassed path) does nothing.
func TestGateCommandsThroughProxy(t *testing.T) {
	t.Parallel()
	e, rec := newCommandEnv(t)
	tk := e.admittedPassToExtend(t)
	bearer := []string{"Authorization", "Bearer " + tk.Pass, "Accept", "application/json"}

	for _, p := range []string{"/static/cmd/done", "/static/cmd/extend", "/cmd/Launch", "/cmd/extend"} {
		h := bearer
		if strings.HasPrefix(p, "/static/") {
			h = nil // no pass: nothing is done
		}
		r := e.do("GET", p, "", h...)
		if r.status != 200 || r.header.Values(gate.HeaderCommand) != nil {
			t.Fatalf("%s: %d, %s %q reached the client", p, r.status, gate.HeaderCommand, r.header.Values(gate.HeaderCommand))
		}
	}
	if e.verify(tk.Pass).status != 200 {
		t.Fatal("a command without a pass ended the admission")
	}
	for _, want := range [][3]string{{"", "done", "no_pass"}, {"", "extend", "no_pass"}, {"", "other", "unknown"}, {e.queue, "extend", "ok"}} {
		if n := rec.get(want[0], want[1], want[2]); n != 1 {
			t.Errorf("%v counted %d times, want 1", want, n)
		}
	}
	// done: the next request with the pass is refused.
	if r := e.do("GET", "/cmd/done", "", bearer...); r.status != 200 || r.header.Get(gate.HeaderCommand) != "" {
		t.Fatalf("done: %d %q", r.status, r.header.Get(gate.HeaderCommand))
	}
	if rec.get(e.queue, "done", "ok") != 1 {
		t.Fatalf("done not counted: %v", rec.n)
	}
	wantError(t, e.verify(tk.Pass), 401, "invalid_pass")
	var actions []string
	for _, en := range originEntries(t, e) {
		if en.Target != tk.UserID || strings.Contains(fmt.Sprint(en), tk.Pass) {
			t.Fatalf("audit entry %+v: want the member as target, and never the pass", en)
		}
		actions = append(actions, en.Action)
	}
	if strings.Join(actions, ",") != command.ActionDone+","+command.ActionExtend {
		t.Fatalf("audited %v, want done then extend (newest first)", actions)
	}
}

// The commands endpoint, with the pass as its credential: each command
// once, a spent admission, refusals with stable codes, and a thousand
// calls with one pass cost the store two and one a second.
func TestCommandsEndpoint(t *testing.T) {
	t.Parallel()
	e, rec := newCommandEnv(t)
	tk := e.admittedPassToExtend(t)
	path := "/api/v1/queues/" + e.queue + "/commands"
	post := func(body string, h ...string) response { return e.do("POST", path, body, h...) }
	auth := bearerHeader(tk.Pass)
	if r := post(`{"command":"extend"}`, auth...); r.status != 200 || !strings.Contains(string(r.body), `"result":"ok"`) {
		t.Fatalf("extend: %d %s", r.status, r.body)
	}
	wantError(t, post(`{"command":"launch"}`, auth...), 400, "invalid_command")
	wantError(t, post(`{"command":"done"}`), 401, "invalid_pass")
	wantError(t, post(`{"command":"done"}`, bearerHeader("forged")...), 401, "invalid_pass")
	wantError(t, post(`{"command":"done","x":1}`, auth...), 400, "invalid_json")
	// The budget of one pass: a thousand calls, most refused before Redis.
	ok, limited := 0, 0
	start := time.Now()
	for range 1000 {
		r := e.h
		w := httptest.NewRecorder()
		req := httptest.NewRequest("POST", path, strings.NewReader(`{"command":"done"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tk.Pass)
		r.ServeHTTP(w, req)
		switch w.Code {
		case 200:
			ok++
		case 429:
			limited++
		default:
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	}
	ran := rec.get(e.queue, "done", "ok") + rec.get(e.queue, "done", "not_current")
	bound := command.PerPassBurst + int(time.Since(start)/command.PerPassEvery) + 1
	if ok != ran || ran > bound || rec.get(e.queue, "done", "ok") != 1 || ok+limited != 1000 {
		t.Fatalf("1,000 dones: %d answered, %d limited, %d reached the store (ok %d), want at most %d", ok, limited, ran, rec.get(e.queue, "done", "ok"), bound)
	}
	wantError(t, e.verify(tk.Pass), 401, "invalid_pass")
}

// The Go middleware for an order page, against a live waitroom: the page's
// command is removed from its answer and carried to the commands endpoint
// with the pass; from an answer to a request without a pass it is removed
// and nothing is asked.
func TestMiddlewareCommands(t *testing.T) {
	t.Parallel()
	e, rec := newCommandEnv(t)
	tk := e.admittedPassToExtend(t)
	var mu sync.Mutex
	heard := map[string]int{}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	g, err := gate.New(ctx, gate.Options{
		Queue: e.queue, Issuer: testIssuer, JWKSURL: e.srv.URL + "/.well-known/jwks.json", VerifyURL: e.srv.URL + "/api/v1/verify",
		CommandURL: e.srv.URL + "/api/v1/queues/{queue}/commands", Bypass: []string{"/static/"},
		OnCommand: func(q, cmd, result string) {
			mu.Lock()
			heard[q+" "+cmd+" "+result]++
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	page := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, v, ok := strings.Cut(r.URL.Path, "/cmd/"); ok {
			w.Header().Set(gate.HeaderCommand, v)
		}
		if !strings.HasPrefix(r.URL.Path, "/quiet/") { // else net/http writes the header itself
			w.WriteHeader(200)
		}
	}))
	serve := func(p, token string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", p, nil)
		if token != "" {
			r.Header.Set(gate.HeaderPass, token)
		}
		w := httptest.NewRecorder()
		page.ServeHTTP(w, r)
		return w
	}
	for _, p := range []string{"/static/cmd/done", "/quiet/cmd/extend", "/cmd/done"} {
		token := tk.Pass
		if strings.HasPrefix(p, "/static/") {
			token = ""
		}
		if w := serve(p, token); w.Code != 200 || w.Header().Values(gate.HeaderCommand) != nil {
			t.Fatalf("%s: %d, %q reached the client", p, w.Code, w.Header().Values(gate.HeaderCommand))
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{" done no_pass", e.queue + " extend ok", e.queue + " done ok"} {
		if heard[want] != 1 {
			t.Errorf("the middleware heard %v, want %q once", heard, want)
		}
	}
	if rec.get("", "done", "no_pass") != 0 || rec.get(e.queue, "done", "ok") != 1 {
		t.Errorf("the waitroom counted %v: want the one done, and nothing for the request without a pass", rec.n)
	}
	wantError(t, e.verify(tk.Pass), 401, "invalid_pass")
}
