package e2e

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/failopen"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/ops/metrics"
	"github.com/waitroom/waitroom/internal/testkit/envconfig"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// lineCounter counts the log records whose message contains match.
type lineCounter struct {
	match string
	mu    sync.Mutex
	n     int
}

func (c *lineCounter) Enabled(context.Context, slog.Level) bool { return true }
func (c *lineCounter) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, c.match) {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return nil
}
func (c *lineCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *lineCounter) WithGroup(string) slog.Handler      { return c }
func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// failStack is a stack in gate mode with one WAITROOM_GATE_FAIL, wired
// as main wires it (Ping, the fail-open record, its metric and log), with
// the shipped nginx config in front of the same order site.
type failStack struct {
	*stack
	mode    gate.FailMode
	nginx   string // base URL through nginx (forward auth); "" without nginx
	metrics *metrics.Metrics
	lines   *lineCounter
	// The passes: valid, revoked (its user removed) and forged.
	valid, revoked, forged string
	member, revokedMember  string // the valid and revoked passes' subs
}

// twoRooms adds the room of /b/ (stack.queueB).
func newFailStack(t *testing.T, ctr *redistest.Container, mode gate.FailMode, order *httptest.Server, nginxBin string, twoRooms bool) *failStack {
	t.Helper()
	opts := envconfig.SingleRedis(t, envconfig.Load(t, nil))
	rdb := ctr.Client(t, opts)
	up, _ := url.Parse(order.URL)
	fs := &failStack{mode: mode, lines: &lineCounter{match: "failing open"}}
	ctx, cancel := context.WithCancel(context.Background())
	var runs sync.WaitGroup
	t.Cleanup(func() { cancel(); runs.Wait() })
	var recorder *failopen.Recorder
	var err error
	fs.stack = newStack(t, stackOptions{
		settings: queue.Settings{RefillSize: 100, RefillInterval: time.Second, SessionTTL: time.Minute},
		redis:    rdb,
		upstream: up,
		twoRooms: twoRooms,
		gate: func(o *proxy.GateOptions, store *queue.Store) {
			fs.metrics = metrics.New(store)
			if recorder, err = failopen.New(rdb, time.Second, fs.metrics.GateFailOpen); err != nil {
				t.Fatal(err)
			}
			runs.Go(func() { recorder.Run(ctx, slog.New(slog.DiscardHandler)) })
			o.Fail, o.Ping, o.OnFailOpen = mode, store.Ping, recorder.Passed
			o.Logger = slog.New(fs.lines)
		},
		api: func(o *httpapi.Options) { o.FailOpens = recorder },
	})
	if nginxBin != "" {
		fs.nginx = startNginx(t, nginxBin, strings.TrimPrefix(fs.url, "http://"), strings.TrimPrefix(order.URL, "http://"))
	}
	fs.valid, fs.member = fs.enter()
	fs.revoked, fs.revokedMember = fs.enter()
	fs.forged = fs.valid[:len(fs.valid)-8] + "AAAAAAAA"
	return fs
}

// enter takes a place through the API (admitted at once: the bucket's
// tokens) and returns its pass and member id.
func (fs *failStack) enter() (string, string) {
	fs.t.Helper()
	return fs.enterQueue(fs.queue)
}

// enterQueue is enter for queue q.
func (fs *failStack) enterQueue(q string) (string, string) {
	fs.t.Helper()
	resp, err := http.Post(fs.url+"/api/v1/queues/"+q+"/enter", "application/json", strings.NewReader("{}"))
	if err != nil {
		fs.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tk struct {
		UserID string `json:"user_id"`
		Status string `json:"status"`
		Pass   string `json:"pass"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || tk.Status != "ENTERED" || tk.Pass == "" {
		fs.t.Fatalf("enter: %d %v %+v", resp.StatusCode, err, tk)
	}
	return tk.Pass, tk.UserID
}

// failOpenCount scrapes waitroom_gate_fail_open_total for the stack's queue.
func (fs *failStack) failOpenCount() int {
	fs.t.Helper()
	return fs.failOpenCountOf(fs.queue)
}

// failOpenCountOf scrapes waitroom_gate_fail_open_total for queue q.
func (fs *failStack) failOpenCountOf(q string) int {
	fs.t.Helper()
	rec := httptest.NewRecorder()
	fs.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	want := `waitroom_gate_fail_open_total{queue="` + q + `"} `
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), want); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err != nil {
				fs.t.Fatalf("metric line %q: %v", sc.Text(), err)
			}
			return n
		}
	}
	fs.t.Fatalf("no %s in the metrics", want)
	return 0
}

// answer is what a client got, and what the order site saw of it.
type answer struct {
	status int
	header http.Header
	body   string
}

// fetch asks base for /order as a browser (json false) or an API client,
// with the pass token in the pass cookie ("" none), following no
// redirect.
func (fs *failStack) fetch(base, token string, json bool) answer {
	fs.t.Helper()
	req, err := http.NewRequest("GET", base+"/order?x=1", nil)
	if err != nil {
		fs.t.Fatal(err)
	}
	if json {
		req.Header.Set("Accept", "application/json")
	} else {
		req.Header.Set("Accept", "text/html")
	}
	if token != "" {
		req.AddCookie(&http.Cookie{Name: gate.CookieName(fs.queue, false), Value: token})
	}
	client := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	resp, err := client.Do(req)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{resp.StatusCode, resp.Header, string(b)}
}

// orderSite answers "order:" and the X-Waitroom-Sub it got.
func orderSite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "order:"+r.Header.Get(gate.HeaderSub))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// outcome names what an answer is: "order:<sub>" (reached the site),
// "waiting" (303 to the waiting page), "refused" (401 JSON),
// "unavailable" (503: the page for browsers, JSON unavailable for API
// clients, both with Retry-After), or what it was.
func (fs *failStack) outcome(a answer, json bool) string {
	switch {
	case a.status == 200 && strings.HasPrefix(a.body, "order:"):
		return a.body
	case a.status == http.StatusSeeOther && strings.HasPrefix(a.header.Get("Location"), "/q/"+fs.queue):
		return "waiting"
	case a.status == http.StatusUnauthorized && strings.Contains(a.body, `"pass_required"`):
		return "refused"
	case a.status == http.StatusServiceUnavailable && a.header.Get("Retry-After") != "" &&
		(json && strings.Contains(a.body, `"code":"unavailable"`) ||
			!json && strings.Contains(a.body, "waiting room is briefly unavailable") && strings.Contains(a.body, `http-equiv="refresh"`)):
		return "unavailable"
	}
	return fmt.Sprintf("%d %q %.80q", a.status, a.header.Get("Location"), a.body)
}

// Redis paused under three gates, one per WAITROOM_GATE_FAIL, each behind
// the reverse-proxy gate and behind the shipped nginx config (forward
// auth): exactly who passes in each mode, with no pass, a valid pass, a
// revoked one and a forged one; that fail-open requests are counted in the
// metric and logged once; that the back office shows them once Redis is
// back; and that every gate closes again once it is.
func TestGateFailModesRedisPaused(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	ctr := redistest.NewContainer(t)
	order := orderSite(t)
	modes := []gate.FailMode{gate.FailClosed, gate.FailOpen, gate.FailStrict}
	stacks := map[gate.FailMode]*failStack{}
	for _, m := range modes {
		stacks[m] = newFailStack(t, ctr, m, order, bin, false)
	}

	// Before: Redis answers. The revoked pass is refused once its user is
	// removed (within the 2 s recheck), the forged one always.
	for _, fs := range stacks {
		fs.remove(fs.revokedMember)
		for _, base := range []string{fs.url, fs.nginx} {
			if got := fs.outcome(fs.fetch(base, fs.valid, false), false); got != "order:"+fs.member {
				t.Fatalf("%s, Redis up, valid pass via %s: %s", fs.mode, base, got)
			}
			if got := fs.outcome(fs.fetch(base, "", false), false); got != "waiting" {
				t.Fatalf("%s, Redis up, no pass: %s", fs.mode, got)
			}
			wait.For(t, 30*time.Second, "the revoked pass to be refused", func() (bool, string) {
				got := fs.outcome(fs.fetch(base, fs.revoked, false), false)
				return got == "waiting", got
			})
		}
	}

	if err := ctr.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = ctr.Unpause(context.Background())
		}
	})
	pausedAt := time.Now()
	// Each gate sees Redis away by its own ping (at most a second apart,
	// each bounded by the Redis client's 1 s timeout): no pass holder needed.
	for _, fs := range stacks {
		asked := time.Now()
		wait.For(t, 30*time.Second, string(fs.mode)+" gate to see Redis away", func() (bool, string) {
			a := fs.fetch(fs.url, "", true)
			return a.status != http.StatusSeeOther && a.status != http.StatusUnauthorized, fmt.Sprint(a.status)
		})
		t.Logf("%s gate: Redis seen away %s after the pause, %s after its first request since", fs.mode,
			time.Since(pausedAt).Round(time.Millisecond), time.Since(asked).Round(time.Millisecond))
	}

	// A forged pass is refused as ever in every mode (and the browser
	// sent to the waiting page); the rest is the mode's to decide.
	type want struct{ none, valid, revoked, forged, noneAPI string }
	wants := map[gate.FailMode]want{
		gate.FailClosed: {none: "unavailable", valid: "order:%s", revoked: "order:%s", forged: "waiting", noneAPI: "unavailable"},
		gate.FailOpen:   {none: "order:", valid: "order:%s", revoked: "order:%s", forged: "waiting", noneAPI: "order:"},
		gate.FailStrict: {none: "unavailable", valid: "unavailable", revoked: "unavailable", forged: "waiting", noneAPI: "unavailable"},
	}
	for _, m := range modes {
		fs, w := stacks[m], wants[m]
		before := fs.failOpenCount()
		start := time.Now()
		passedOpen := 0
		for _, door := range []struct{ name, base string }{{"reverse-proxy gate", fs.url}, {"nginx", fs.nginx}} {
			for _, c := range []struct {
				what, token, want string
				json              bool
			}{
				{"no pass", "", w.none, false},
				{"no pass, API client", "", w.noneAPI, true},
				{"valid pass", fs.valid, strings.ReplaceAll(w.valid, "%s", fs.member), false},
				{"revoked pass", fs.revoked, strings.ReplaceAll(w.revoked, "%s", fs.revokedMember), false},
				{"forged pass", fs.forged, w.forged, false},
				{"forged pass, API client", fs.forged, "refused", true},
			} {
				got := fs.outcome(fs.fetch(door.base, c.token, c.json), c.json)
				if got != c.want {
					t.Errorf("%s, Redis paused, %s via the %s: %s, want %s", m, c.what, door.name, got, c.want)
				}
				if got == "order:" {
					passedOpen++
				}
			}
		}
		// An ambiguous path is 400 invalid_path, as ever.
		if r, err := http.Get(fs.url + "/a/%2e%2e/order"); err != nil || r.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: ambiguous path: %v %v", m, r, err)
		} else {
			r.Body.Close()
		}
		// Many more fail-open requests: each counted, one log line.
		if m == gate.FailOpen {
			for range 50 {
				if got := fs.outcome(fs.fetch(fs.url, "", false), false); got != "order:" {
					t.Fatalf("open: %s", got)
				}
				passedOpen++
			}
		}
		if got := fs.failOpenCount() - before; got != passedOpen {
			t.Errorf("%s: the metric counted %d requests let through unchecked, %d were", m, got, passedOpen)
		}
		if m == gate.FailOpen {
			if n := fs.lines.count(); n != 1 {
				t.Errorf("open: %d fail-open log lines in %s, want 1 (at most once a minute)", n, time.Since(start).Round(time.Millisecond))
			}
		} else if fs.failOpenCount() != 0 || fs.lines.count() != 0 {
			t.Errorf("%s: counted %d fail-opens, logged %d lines", m, fs.failOpenCount(), fs.lines.count())
		}
	}
	t.Logf("Redis paused for %s", time.Since(pausedAt).Round(time.Millisecond))

	if err := ctr.Unpause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused = false
	resumed := time.Now()
	for _, m := range modes {
		fs := stacks[m]
		for _, base := range []string{fs.url, fs.nginx} {
			wait.For(t, 30*time.Second, string(m)+" gate to close again", func() (bool, string) {
				got := fs.outcome(fs.fetch(base, "", false), false)
				return got == "waiting", got
			})
			if got := fs.outcome(fs.fetch(base, fs.revoked, false), false); got != "waiting" {
				t.Errorf("%s, Redis back, revoked pass: %s", m, got)
			}
			if got := fs.outcome(fs.fetch(base, fs.valid, false), false); got != "order:"+fs.member {
				t.Errorf("%s, Redis back, valid pass: %s", m, got)
			}
		}
	}
	closed := time.Now()
	t.Logf("every gate closed again %s after Redis resumed", closed.Sub(resumed).Round(time.Millisecond))

	// The back office shows the fail-open after the outage: stored once
	// Redis answered (failopen.FlushEvery), over every replica. (The open
	// gate's last ones may come just after Redis resumed, before its ping
	// saw it back.)
	for _, m := range modes {
		fs := stacks[m]
		want := fs.failOpenCount()
		wait.For(t, 3*failopen.FlushEvery, string(m)+" back office to show the fail-open", func() (bool, string) {
			aq := fs.adminQueue()
			ok := aq.Requests == int64(want) && (want == 0) == (aq.LastAtMS == 0) &&
				(want == 0 || aq.LastAtMS >= pausedAt.UnixMilli() && aq.LastAtMS <= closed.UnixMilli())
			return ok, fmt.Sprintf("%+v, want %d requests", aq, want)
		})
	}

	// And the back office page says so, in a real browser.
	fs := stacks[gate.FailOpen]
	b := newBrowser(t, chromiumPath(t))
	b.navigate(fs.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out'`)
	b.do("sign in", chromedp.SendKeys(chromedp.CSS("#token"), adminToken), chromedp.Click(chromedp.CSS("#login-btn")))
	cell := fmt.Sprintf(`[data-queue=%q] .fail-open`, fs.queue)
	b.waitJS(10*time.Second, "the fail-open stat", fmt.Sprintf(`(document.querySelector(%q)?.textContent || '').includes(' requests unchecked')`, cell))
	shown := fmt.Sprintf("%d requests unchecked, last ", fs.failOpenCount())
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).textContent`, cell)); !strings.HasPrefix(got, shown) {
		t.Errorf("back office: %q, want %q…", got, shown)
	}
	b.screenshot("gate-failed-open")
}

type failOpenView struct {
	Requests int64 `json:"gate_fail_open_requests"`
	LastAtMS int64 `json:"gate_fail_open_last_at_ms"`
}

// adminQueue reads the queue's fail-open fields from the admin API.
func (fs *failStack) adminQueue() failOpenView {
	fs.t.Helper()
	req, _ := http.NewRequest("GET", fs.url+"/admin/v1/queues/"+fs.queue, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fs.t.Fatal(err)
	}
	defer resp.Body.Close()
	var v failOpenView
	if resp.StatusCode != 200 {
		return v
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		fs.t.Fatal(err)
	}
	return v
}

// Two rooms (/b/ the room of queue B, every other path A's) with Redis
// paused, one gate per WAITROOM_GATE_FAIL, through the reverse-proxy gate
// and the shipped nginx config: a valid pass for room A never opens room
// B's paths, whether it comes as a bearer token or planted in B's cookie.
// closed and strict refuse it as when Redis answers (to B's waiting page);
// open lets its holder through as it lets everyone, unchecked, counted
// under B, and the order site gets nothing naming A: no X-Waitroom-*
// header, no pass.
func TestGateFailModesTwoRoomsRedisPaused(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	ctr := redistest.NewContainer(t)
	// The order site answers what it got: the holder and queue named,
	// and any pass (bearer or X-Waitroom-Pass).
	order := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "order:%s/%s/%s%s", r.Header.Get(gate.HeaderSub), r.Header.Get(gate.HeaderQueue),
			strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), r.Header.Get(gate.HeaderPass))
	}))
	t.Cleanup(order.Close)
	modes := []gate.FailMode{gate.FailClosed, gate.FailOpen, gate.FailStrict}
	stacks := map[gate.FailMode]*failStack{}
	passB := map[gate.FailMode]string{}
	memberB := map[gate.FailMode]string{}
	for _, m := range modes {
		fs := newFailStack(t, ctr, m, order, bin, true)
		stacks[m] = fs
		passB[m], memberB[m] = fs.enterQueue(fs.queueB)
	}
	client := &http.Client{Timeout: 15 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	// ask names what base answered for path with the pass in a bearer
	// token (an API client) or in room B's cookie (a browser):
	// "order:<sub>/<queue>/<pass>", "waiting <queue>" (303), "refused
	// <queue>" (401 naming its waiting page), "unavailable" (503).
	ask := func(fs *failStack, base, path, token string, bearer bool) string {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if bearer {
			req.Header.Set("Accept", "application/json")
			req.Header.Set("Authorization", "Bearer "+token)
		} else {
			req.Header.Set("Accept", "text/html")
			req.AddCookie(&http.Cookie{Name: gate.CookieName(fs.queueB, false), Value: token})
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body, loc := string(b), resp.Header.Get("Location")
		switch {
		case resp.StatusCode == 200 && strings.HasPrefix(body, "order:"):
			return body
		case resp.StatusCode == http.StatusSeeOther && strings.HasPrefix(loc, "/q/"):
			q, _, _ := strings.Cut(strings.TrimPrefix(loc, "/q/"), "?")
			return "waiting " + q
		case resp.StatusCode == http.StatusUnauthorized && strings.Contains(body, `"pass_required"`):
			var e struct {
				Error struct {
					WaitingPage string `json:"waiting_page"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &e)
			q, _, _ := strings.Cut(strings.TrimPrefix(e.Error.WaitingPage, "/q/"), "?")
			return "refused " + q
		case resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "":
			return "unavailable"
		}
		return fmt.Sprintf("%d %q %.80q", resp.StatusCode, loc, body)
	}

	// Redis up: each pass opens its own room only.
	for _, m := range modes {
		fs := stacks[m]
		if got := ask(fs, fs.url, "/b/order", fs.valid, true); got != "refused "+fs.queueB {
			t.Fatalf("%s, Redis up, A's pass on B's path: %s", m, got)
		}
		if got, want := ask(fs, fs.url, "/b/order", passB[m], true), "order:"+memberB[m]+"/"+fs.queueB+"/"+passB[m]; got != want {
			t.Fatalf("%s, Redis up, B's pass on B's path: %s, want %s", m, got, want)
		}
	}

	if err := ctr.Pause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused := true
	t.Cleanup(func() {
		if paused {
			_ = ctr.Unpause(context.Background())
		}
	})
	for _, m := range modes {
		fs := stacks[m]
		wait.For(t, 30*time.Second, string(m)+" gate to see Redis away", func() (bool, string) {
			a := fs.fetch(fs.url, "", true)
			return a.status != http.StatusSeeOther && a.status != http.StatusUnauthorized, fmt.Sprint(a.status)
		})
	}

	for _, m := range modes {
		fs := stacks[m]
		before := fs.failOpenCountOf(fs.queueB)
		passedOpen := 0
		for _, door := range []struct{ name, base string }{{"reverse-proxy gate", fs.url}, {"nginx", fs.nginx}} {
			validB := map[gate.FailMode]string{
				gate.FailClosed: "order:" + memberB[m] + "/" + fs.queueB + "/",
				gate.FailOpen:   "order:" + memberB[m] + "/" + fs.queueB + "/",
				gate.FailStrict: "unavailable",
			}[m]
			for _, c := range []struct {
				what, token string
				bearer      bool
				want        map[gate.FailMode]string
			}{
				{"A's pass as a bearer token", fs.valid, true, map[gate.FailMode]string{
					gate.FailClosed: "refused " + fs.queueB, gate.FailOpen: "order://", gate.FailStrict: "refused " + fs.queueB}},
				{"A's pass in B's cookie", fs.valid, false, map[gate.FailMode]string{
					gate.FailClosed: "waiting " + fs.queueB, gate.FailOpen: "order://", gate.FailStrict: "waiting " + fs.queueB}},
				{"B's pass in B's cookie", passB[m], false, map[gate.FailMode]string{m: validB}},
			} {
				got := ask(fs, door.base, "/b/order", c.token, c.bearer)
				if door.name == "nginx" && c.bearer {
					// nginx hands the client's own headers on as they
					// came; only what it sets from /gate/verify counts.
					got = strings.TrimSuffix(got, c.token)
				}
				if door.name != "nginx" && strings.HasPrefix(c.want[m], "order:") && c.want[m] != "order://" {
					got = strings.TrimSuffix(got, c.token) // the reverse-proxy gate hands the checked pass on
				}
				if got != c.want[m] {
					t.Errorf("%s, Redis paused, %s on B's path via the %s: %s, want %s", m, c.what, door.name, got, c.want[m])
				}
				if got == "order://" {
					passedOpen++
				}
			}
		}
		if got := fs.failOpenCountOf(fs.queueB) - before; got != passedOpen {
			t.Errorf("%s: %d requests on B's path counted as let through unchecked under B, %d were", m, got, passedOpen)
		}
	}

	if err := ctr.Unpause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused = false
	for _, m := range modes {
		fs := stacks[m]
		wait.For(t, 30*time.Second, string(m)+" gate to refuse A's pass on B's path again", func() (bool, string) {
			got := ask(fs, fs.url, "/b/order", fs.valid, true)
			return got == "refused "+fs.queueB, got
		})
	}
}

// waitroom itself not answering: the shipped nginx config shows its own
// unavailable page (503, Retry-After, reloading) rather than a 500.
func TestNginxWaitroomDown(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	order := orderSite(t)
	base := startNginx(t, bin, freePort(t), strings.TrimPrefix(order.URL, "http://"))
	for _, accept := range []string{"text/html", "application/json"} {
		req, _ := http.NewRequest("GET", base+"/order", nil)
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
			!strings.Contains(string(b), "waiting room is unavailable") || strings.HasPrefix(string(b), "order:") {
			t.Fatalf("%s: %d %q %.200s", accept, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
}
