package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// testTimeout bounds everything one test does in its browser, so a hung
// page fails the test instead of the whole run.
const testTimeout = 90 * time.Second

// chromiumPath finds the browser or skips the test (fails it on CI).
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
		msg := fmt.Sprintf("chromium not found at %s; run scripts/install-tools.sh test (or set CHROMIUM_PATH)", path)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// browser is one headless Chromium with one tab, closed when the test ends.
// Tests find the binary with chromiumPath before they start the stack, so
// a machine without Chromium skips without starting Redis.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu       sync.Mutex
	problems []string // exceptions, console errors, CSP reports
	shots    int
	reloaded bool // a stalled page was reloaded once (waitJS)
	loads    int  // the pages loaded (navigate, reload), each attempt counted

	journal journal // requests and console, printed when a wait fails

	drawIntercept // the draw's list served in place of the server's (draw_test.go)
}

func newBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	return newBrowserIn(t, chromium, "en-US")
}

// newBrowserIn is newBrowser for a user whose browser asks for lang (a
// BCP 47 tag such as "ko-KR"): its navigator.language and Accept-Language.
// Headless Chromium takes the first from --accept-lang, not --lang.
func newBrowserIn(t *testing.T, chromium, lang string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], // headless, disable-background-networking, ...
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
		chromedp.Flag("lang", lang),
		chromedp.Flag("accept-lang", lang),
	)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	ctx, cancelTab := chromedp.NewContext(ctx)
	b := &browser{t: t, ctx: ctx}

	// Start the browser and the tab now, so the console subscription below
	// sees the first page.
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	if err := b.journal.listen(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		cancel()
		t.Fatalf("journal: %v", err)
	}
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser logs failed requests (such as the expected 401 of a
			// wrong admin token) with source "network"; those are not page bugs.
			if m.Source == "network" || (m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleWarning && !m.IsException()) {
				continue
			}
			b.mu.Lock()
			b.problems = append(b.problems, fmt.Sprintf("%s (%s:%d)", m, m.URL, m.Line+1))
			b.mu.Unlock()
		}
	}()

	t.Cleanup(func() {
		stopConsole()
		<-done
		cancelTab()
		cancelAlloc()
		cancel()
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("browser console: %s", p)
		}
	})
	return b
}

// do runs actions and fails the test on error.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail("%s: %v", what, err)
	}
}

// navigate opens url. A load that Chromium dropped because the network
// changed under it (net::ERR_NETWORK_CHANGED: Docker starting or
// stopping a container adds or removes an interface) is made again, as
// a person would reload: the page's own document, or any of its scripts
// and styles (a page that lost a module loads without it, broken).
func (b *browser) navigate(url string) {
	b.t.Helper()
	b.load("navigate to "+url, func() chromedp.Action[chromedp.Void] { return chromedp.Navigate(url) })
}

// reload loads the page again, as navigate loads one.
func (b *browser) reload() {
	b.t.Helper()
	b.load("reload", chromedp.Reload)
}

// load runs the load action makes, again while the network changed under
// it, at most navigateAttempts times.
func (b *browser) load(what string, action func() chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	var err error
	for range navigateAttempts {
		dropped := b.journal.netChanged.Load()
		b.loads++
		err = chromedp.Do(b.ctx, action())
		if err != nil && !strings.Contains(err.Error(), "ERR_NETWORK_CHANGED") {
			break
		}
		if err == nil && b.journal.netChanged.Load() == dropped {
			break
		}
		b.t.Logf("%s: the network changed under the load (%v); again", what, err)
	}
	if err != nil {
		b.fail("%s: %v", what, err)
	}
}

// navigateAttempts bounds the loads of one navigate.
const navigateAttempts = 3

// inZone sets the page's time zone (an IANA name such as "Asia/Seoul"), as
// for a user there, whatever the machine's; it lasts across navigations.
func (b *browser) inZone(zone string) {
	b.t.Helper()
	if _, err := chromedp.Call(b.ctx, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: zone}); err != nil {
		b.fail("time zone %s: %v", zone, err)
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.fail("evaluate %s: %v", js, err)
	}
	return v
}

// text is the trimmed text of the first element matching a CSS selector,
// or "" when there is none.
func (b *browser) text(css string) string {
	b.t.Helper()
	return strings.TrimSpace(eval[string](b, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ''`, strconv.Quote(css))))
}

// number reads an element's text as a whole number ("1,234" -> 1234).
func (b *browser) number(css string) int64 {
	b.t.Helper()
	s := b.text(css)
	n, err := strconv.ParseInt(strings.ReplaceAll(s, ",", ""), 10, 64)
	if err != nil {
		b.fail("%s: %q is not a number", css, s)
	}
	return n
}

// slowWait is a wait worth a line in the test's log: a page slower
// than this tells of a loaded machine, or of a page that waited on
// something (its journal says what when the wait fails).
const slowWait = 5 * time.Second

// minPageWait is the least a page is waited for. A wait's timeout is how
// long the test waits before it calls the page broken, never a claim on
// how fast the page is: beside a compiler on two cores Chromium took
// over 15 s to show a turn it shows in 4 s on an idle machine, and a
// switch of language over 5 s. A page that does as it should returns
// as soon as it does, so the floor costs nothing when a test passes.
const minPageWait = 30 * time.Second

// waitJS polls a JavaScript condition until it is true, for timeout or
// minPageWait, whichever is longer. Errors count as false: the page may
// be between two documents while it navigates. It is its own loop, not
// wait.For: a reload of a stalled page starts its timeout again, and a
// failure leaves a screenshot and the page's journal.
func (b *browser) waitJS(timeout time.Duration, what, js string) {
	b.t.Helper()
	timeout = max(timeout, minPageWait)
	began := time.Now()
	deadline := began.Add(timeout)
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		cancel()
		if err == nil && ok {
			if took := time.Since(began); took > slowWait {
				b.t.Logf("slow: %v waiting for %s", took.Round(time.Millisecond), what)
			}
			return
		}
		lastErr = err
		if b.ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
		if lost := b.lost(); len(lost) > 0 && !b.reloaded {
			// Beside a compiler Chromium once left a page's module requests
			// unsent for the rest of a test: the server never saw them, so
			// no code of ours was waited on. A person reloads such a page.
			b.reloaded = true
			b.t.Logf("chromium stalled: %d requests sent over %v ago never reached the server (%s); reloading\n%s",
				len(lost), stallAfter, strings.Join(lost, ", "), b.journal.String())
			b.reload()
			deadline = time.Now().Add(timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.fail("timed out after %v waiting for %s (last error: %v); page: %s", timeout, what, lastErr, b.describe())
}

// stallAfter is how long a request may stay open before lost asks the
// server whether it ever arrived.
const stallAfter = 10 * time.Second

// lost is the page's requests open for stallAfter that never reached
// the test's server (a stack's recorder): a stall inside Chromium,
// told apart from a slow answer of ours, which the server did receive.
func (b *browser) lost() []string {
	var out []string
	for _, s := range b.journal.open(stallAfter) {
		u, err := url.Parse(s.url)
		if err != nil {
			continue
		}
		rec, ok := recorders.Load(u.Host)
		if !ok {
			continue
		}
		// The event's wall time and the server's clock are one machine's,
		// but Chromium stamps a request before it writes it: a little slack.
		if !rec.(*recorder).arrived(s.method, u.Path, s.at.Add(-time.Second)) {
			out = append(out, s.what)
		}
	}
	return out
}

// cookie returns the browser's cookie name for url, HttpOnly ones too
// (which the page cannot read), or nil when it holds none.
func (b *browser) cookie(url, name string) *network.Cookie {
	b.t.Helper()
	res, err := chromedp.Call(b.ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{url}})
	if err != nil {
		b.fail("get cookies for %s: %v", url, err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// describe summarises the page for failure messages.
func (b *browser) describe() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](
		`location.href + ' state=' + document.body.dataset.state + ' status="' +
		 ((document.getElementById('status-text') || {}).textContent || '') + '"' +
		 ((document.getElementById('reconnecting') || {}).hidden === false ? ' reconnecting="' + document.getElementById('reconnecting').textContent.trim() + '"' : '') +
		 ((document.getElementById('checking') || {}).hidden === false ? ' checking the browser' : '')`))
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return s
}

// fail saves a screenshot of the page, logs its journal and stops the
// test.
func (b *browser) fail(format string, args ...any) {
	b.t.Helper()
	if b.ctx.Err() == nil {
		b.screenshot("FAILED")
	}
	b.t.Log(b.journal.String())
	b.t.Fatalf(format, args...)
}

// screenshot saves a full-page PNG as a test artifact, named after the test
// and the state it shows.
func (b *browser) screenshot(state string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	png, err := fullPage(ctx)
	if err != nil {
		b.t.Errorf("screenshot %s: %v", state, err)
		return
	}
	b.mu.Lock()
	b.shots++
	n := b.shots
	b.mu.Unlock()
	dir := artifactsDir(b.t)
	name := fmt.Sprintf("%s-%02d-%s.png", strings.TrimPrefix(b.t.Name(), "Test"), n, state)
	path := filepath.Join(dir, unsafeChars.ReplaceAllString(strings.TrimSuffix(name, ".png"), "-")+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Errorf("screenshot %s: %v", state, err)
		return
	}
	b.t.Logf("screenshot: %s", path)
}

var artifacts struct {
	once sync.Once
	dir  string
	err  error
}

// artifactsDir is $WAITROOM_ARTIFACTS, or artifacts/e2e under the
// repository root (the nearest directory up with a go.mod).
func artifactsDir(t *testing.T) string {
	t.Helper()
	artifacts.once.Do(func() {
		dir := os.Getenv("WAITROOM_ARTIFACTS")
		if dir == "" {
			root, err := repoRoot()
			if err != nil {
				artifacts.err = err
				return
			}
			dir = filepath.Join(root, "artifacts", "e2e")
		}
		artifacts.dir, artifacts.err = dir, os.MkdirAll(dir, 0o755)
	})
	if artifacts.err != nil {
		t.Fatalf("artifacts dir: %v", artifacts.err)
	}
	return artifacts.dir
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// fullPage captures the whole page as a PNG. Like Puppeteer's fullPage, it
// grows the viewport to the page for the capture: Chrome's capture beyond
// the viewport leaves fixed layers (a dialog's backdrop) at viewport size.
func fullPage(ctx context.Context) ([]byte, error) {
	size, err := chromedp.Run(ctx, chromedp.Evaluate[[]int64](
		`[document.documentElement.scrollWidth, Math.max(document.documentElement.scrollHeight, innerHeight)]`))
	if err != nil {
		return nil, err
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1])); err != nil {
		return nil, err
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if _, cerr := chromedp.Call(ctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err == nil {
		err = cerr
	}
	return png, err
}
