// Package agente2e tests waitroom's in-page agent in Chromium from a site of
// another origin: the demo shop (internal/testkit/demo) books with the pass
// the agent gets, and its API, behind the gate middleware, refuses every
// call without a real one. A package of its own, so it runs beside the
// e2e package's long suite instead of after it.
package agente2e

import (
	"context"
	"crypto/rand"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/testkit/demo"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpapi"
	"github.com/waitroom/waitroom/web"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("agente2e: skipped under -short (Chromium)")
		os.Exit(0)
	}
	os.Exit(redistest.Main(m))
}

const issuer = "https://waitroom.agente2e.test"

// pageWait is how long a page gets to show something: generous for a
// loaded machine, and a page that does as it should returns at once.
const pageWait = 45 * time.Second

// site is one test's pair of origins: waitroom on 127.0.0.1 and the shop
// on localhost (another site), each a real server; the queue ticks only
// when the test says (tick), so positions hold still while it reads them.
type site struct {
	t      *testing.T
	queue  string
	other  string // a second queue, whose passes must not book
	store  *queue.Store
	passes *pass.Passes
	codes  *invite.Codes // invitation codes, on as cmd/waitroom has them
	wr     string        // waitroom's base URL
	shop   string        // the shop's base URL (another origin)

	mu    sync.Mutex
	calls []call // waitroom's requests
	// away makes the queue API answer 503 unavailable, as waitroom does
	// while its Redis is gone (with its CORS headers, and Retry-After).
	away atomic.Bool
}

type call struct {
	method, path, origin string
	status               int
	at                   time.Time
}

func newSite(t *testing.T, settings queue.Settings) *site {
	t.Helper()
	return newSiteWith(t, settings, demo.ShopOptions{})
}

// newSiteWith is newSite with the shop's options beyond its addresses.
func newSiteWith(t *testing.T, settings queue.Settings, shopOpts demo.ShopOptions) *site {
	t.Helper()
	return newSiteFull(t, settings, shopOpts, siteExtras{})
}

// siteExtras are what a test adds to waitroom: the store's options and
// the API's.
type siteExtras struct {
	store []queue.Option
	api   func(*httpapi.Options)
}

// newSiteFull is newSiteWith with extras.
func newSiteFull(t *testing.T, settings queue.Settings, shopOpts demo.ShopOptions, x siteExtras) *site {
	t.Helper()
	rdb := redistest.Client(t)
	name := queueName(t)
	s := &site{t: t, queue: name, other: name + "-o"}
	// Places move to other devices, as main wires them.
	moves := handoff.NewTracker(rdb, []string{s.queue, s.other})
	store, err := queue.NewStore(rdb, []string{s.queue, s.other}, settings, 5*time.Second, append(x.store, queue.WithRecentMoves(moves))...)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := queue.NewInspector(store).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	s.store = store
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))

	// Both listeners first: each server names the other.
	wrSrv := httptest.NewUnstartedServer(nil)
	shopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	shopSrv := httptest.NewUnstartedServer(nil)
	shopSrv.Listener.Close()
	shopSrv.Listener = shopLn
	s.wr = "http://" + wrSrv.Listener.Addr().String()
	s.shop = "http://localhost:" + strconv.Itoa(shopLn.Addr().(*net.TCPAddr).Port)

	places, err := place.New(secret())
	if err != nil {
		t.Fatal(err)
	}
	pemKey, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(pemKey)
	if err != nil {
		t.Fatal(err)
	}
	if s.passes, err = pass.New(keys, issuer); err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGate(ctx, proxy.GateOptions{Queue: s.queue, Passes: s.passes, Admissions: store, InsecureCookie: true})
	if err != nil {
		t.Fatal(err)
	}
	origins, err := crossorigin.New([]string{s.shop})
	if err != nil {
		t.Fatal(err)
	}
	static, err := fs.Sub(web.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	if s.codes, err = invite.New(secret()); err != nil {
		t.Fatal(err)
	}
	handoffs := handoff.New(rdb, store, moves, 5*time.Second)
	if err := handoffs.SetPublicURL(s.wr); err != nil {
		t.Fatal(err)
	}
	apiOpts := httpapi.Options{Gate: g, Store: store, Redis: rdb, Places: places, Passes: s.passes, Handoffs: handoffs,
		Origins: origins, Logger: log, Static: static, AdminToken: "agente2e-admin-token-0123456789abcdef", Codes: s.codes}
	if x.api != nil {
		x.api(&apiOpts)
	}
	api := httpapi.New(apiOpts)
	wrSrv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusWriter{ResponseWriter: w, status: 200}
		if s.away.Load() && r.Method != http.MethodOptions && strings.HasPrefix(r.URL.Path, "/api/v1/queues/") { // preflights are answered before routing
			if r.Header.Get("Origin") == s.shop {
				w.Header().Set("Access-Control-Allow-Origin", s.shop)
				w.Header().Set("Access-Control-Expose-Headers", "Retry-After, Date")
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Retry-After", "1")
			rec.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"code":"unavailable","message":"the waiting room is briefly unavailable"}}`))
		} else {
			api.ServeHTTP(rec, r)
		}
		s.mu.Lock()
		s.calls = append(s.calls, call{r.Method, r.URL.Path, r.Header.Get("Origin"), rec.status, time.Now()})
		s.mu.Unlock()
	})
	wrSrv.Start()
	t.Cleanup(wrSrv.Close)

	shopCtx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	shopOpts.Queue, shopOpts.Waitroom, shopOpts.Public, shopOpts.Issuer = s.queue, s.wr, s.wr, issuer
	h, err := demo.NewShop(shopCtx, shopOpts)
	if err != nil {
		t.Fatal(err)
	}
	shopSrv.Config.Handler = h
	shopSrv.Start()
	t.Cleanup(shopSrv.Close)
	return s
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

// count is how many of waitroom's requests from the shop's pages match.
func (s *site) count(method, suffix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.method == method && strings.HasSuffix(c.path, suffix) && c.origin == s.shop {
			n++
		}
	}
	return n
}

// fill makes n people wait ahead, through the store.
func (s *site) fill(n int) {
	s.t.Helper()
	for i, waiting := 0, 0; waiting < n; i++ {
		if i > n+1000 {
			s.t.Fatalf("fill: only %d waiting", waiting)
		}
		tk, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("ahead-%d", i)}})
		if err != nil {
			s.t.Fatal(err)
		}
		if tk.Status == queue.Waiting {
			waiting++
		}
	}
}

// admitAll lets the whole line in: a refill bigger than it, and ticks
// until nobody waits.
func (s *site) admitAll() {
	s.t.Helper()
	big := 1000
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{RefillSize: &big}); err != nil {
		s.t.Fatal(err)
	}
	wait.For(s.t, pageWait, "the line admitted", func() (bool, string) {
		if _, err := s.store.Tick(context.Background(), s.queue); err != nil {
			return false, err.Error()
		}
		in, err := s.store.Info(context.Background(), s.queue)
		if err != nil {
			return false, err.Error()
		}
		return in.Waiting == 0, fmt.Sprintf("%d waiting", in.Waiting)
	})
}

// tickOnce admits the head of the line: one tick that lets one in.
func (s *site) tickOnce() {
	s.t.Helper()
	before := s.waiting()
	wait.For(s.t, pageWait, "a tick", func() (bool, string) {
		if _, err := s.store.Tick(context.Background(), s.queue); err != nil {
			return false, err.Error()
		}
		n := s.waiting()
		return n < before, fmt.Sprintf("%d waiting", n)
	})
}

func (s *site) waiting() int64 {
	s.t.Helper()
	in, err := s.store.Info(context.Background(), s.queue)
	if err != nil {
		s.t.Fatal(err)
	}
	return in.Waiting
}

func secret() []byte {
	b := make([]byte, place.MinSecretBytes)
	_, _ = rand.Read(b)
	return b
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func queueName(t *testing.T) string {
	base := unsafeChars.ReplaceAllString(strings.TrimPrefix(t.Name(), "Test"), "-")
	if len(base) > 30 {
		base = base[:30]
	}
	return fmt.Sprintf("ag-%s-%d", base, time.Now().UnixNano()%1e9)
}

// ---- the browser ----

func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("CHROMIUM_PATH")
	if path == "" {
		path = "/usr/bin/chromium"
		if _, err := os.Stat(path); err != nil {
			if p, err := exec.LookPath("chromium"); err == nil {
				path = p
			}
		}
	}
	if _, err := os.Stat(path); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found at %s", path)
		}
		t.Skipf("chromium not found at %s; run scripts/install-tools.sh test (or set CHROMIUM_PATH)", path)
	}
	return path
}

// browser is one Chromium profile; tab opens its tabs, which share its
// storage as a person's tabs do.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string
	allowed  []string // console text that is expected (the refusals a test provokes)
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("accept-lang", "en-US"),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	// The browser itself, with a first tab left blank: tab opens the
	// others in it, so they share its profile.
	ctx, cancelFirst := chromedp.NewContext(ctx)
	t.Cleanup(func() {
		cancelFirst()
		cancelAlloc()
		cancel()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("browser console: %s", p)
		}
	})
	return b
}

// expect lets console lines containing text pass (a refusal the test
// provokes, which the browser logs).
func (b *browser) expect(text string) {
	b.mu.Lock()
	b.allowed = append(b.allowed, text)
	b.mu.Unlock()
}

type tab struct {
	b   *browser
	t   *testing.T
	ctx context.Context
}

// tab opens a new tab at url.
func (b *browser) tab(url string) *tab {
	b.t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx)
	b.t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		b.t.Fatalf("open a tab: %v", err)
	}
	consoleCtx, stop := context.WithCancel(ctx)
	b.t.Cleanup(stop)
	msgs := chromedp.Console(consoleCtx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Source == "network" || (m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning && !m.IsException()) {
				continue
			}
			line := fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1)
			b.mu.Lock()
			ok := false
			for _, a := range b.allowed {
				ok = ok || strings.Contains(line, a)
			}
			if !ok {
				b.problems = append(b.problems, line)
			}
			b.mu.Unlock()
		}
	}()
	tb := &tab{b: b, t: b.t, ctx: ctx}
	tb.do("navigate to "+url, chromedp.Navigate(url))
	return tb
}

func (tb *tab) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	tb.t.Helper()
	if err := chromedp.Do(tb.ctx, actions...); err != nil {
		tb.t.Fatalf("%s: %v", what, err)
	}
}

func eval[T any](tb *tab, js string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it holds; an error counts as
// false (the page may be loading).
func (tb *tab) waitJS(what, js string) {
	tb.t.Helper()
	var last string
	wait.For(tb.t, pageWait, what, func() (bool, string) {
		ctx, cancel := context.WithTimeout(tb.ctx, 2*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		if err != nil {
			return false, err.Error()
		}
		if !ok {
			d, _ := chromedp.Run(ctx, chromedp.Evaluate[string](dialogText))
			last = d
		}
		res, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById('result') || {}).textContent || ''`))
		return ok, "the dialog: " + last + "; the page's result: " + res
	})
}

// In the agent's dialog (its shadow root): an element's text, and the
// dialog's whole text.
func agentText(id string) string {
	return fmt.Sprintf(`(() => { const h = document.querySelector('[data-waitroom-agent]'); const e = h && h.shadowRoot.getElementById(%q); return e ? e.textContent.trim() : ''; })()`, id)
}

const dialogText = `(() => { const h = document.querySelector('[data-waitroom-agent]'); const d = h && h.shadowRoot.querySelector('dialog'); return d ? d.innerText : '(no dialog)'; })()`

const dialogOpen = `(() => { const h = document.querySelector('[data-waitroom-agent]'); const d = h && h.shadowRoot.querySelector('dialog'); return !!(d && d.open); })()`

func (tb *tab) text(js string) string {
	tb.t.Helper()
	return eval[string](tb, js)
}

// click clicks an element of the page, by CSS selector.
func (tb *tab) click(css string) {
	tb.t.Helper()
	tb.do("click "+css, chromedp.Click(chromedp.CSS(css)))
}

// clickAgent clicks a button of the agent's dialog, by id.
func (tb *tab) clickAgent(id string) {
	tb.t.Helper()
	eval[bool](tb, fmt.Sprintf(`(() => { document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById(%q).click(); return true; })()`, id))
}

// evalAsync evaluates an expression whose value is a promise, and waits
// for it.
func evalAsync[T any](tb *tab, js string) T {
	tb.t.Helper()
	v, err := chromedp.Run(tb.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		tb.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}
