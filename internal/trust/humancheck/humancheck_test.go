package humancheck_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// roomHost is the host the tests' room serves.
const roomHost = "shop.example"

// logs is a slog handler's output, safe to read while calls log.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// newChecker is a Checker of the stand-in sp for roomHost, changed by
// edit, logging at debug into the returned logs.
func newChecker(t *testing.T, sp *humanchecktest.Server, edit func(*humancheck.Options)) (*humancheck.Checker, *logs) {
	t.Helper()
	sp.SetHostname(roomHost)
	o := sp.Options(humancheck.Turnstile, roomHost)
	if edit != nil {
		edit(&o)
	}
	out := &logs{}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := humancheck.New(o, redistest.Client(t), log)
	if err != nil {
		t.Fatal(err)
	}
	return c, out
}

// wantKind fails unless err is of kind (nil for success) with reason.
func wantKind(t *testing.T, what string, err, kind error, reason string) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("%s: %v, want nil", what, err)
		}
		return
	}
	if !errors.Is(err, kind) || humancheck.Reason(err) != reason {
		t.Fatalf("%s: %v (reason %q), want %v with reason %q", what, err, humancheck.Reason(err), kind, reason)
	}
}

// within runs f and fails the test if it does not return before the
// deadline: a bound on hanging, never a measure of time.
func within(t *testing.T, deadline time.Duration, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(deadline):
		t.Fatalf("%s: still running after %s", what, deadline)
		return nil
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sp := humanchecktest.NewServer(t)
	c, _ := newChecker(t, sp, nil)

	tok := sp.Issue()
	wantKind(t, "an issued token", c.Verify(ctx, tok, "192.0.2.7"), nil, "")
	wantKind(t, "the same token again", c.Verify(ctx, tok, "192.0.2.7"), humancheck.ErrFailed, humancheck.ReasonReused)
	wantKind(t, "a token never issued", c.Verify(ctx, "standin.forged."+time.Now().Format(time.RFC3339Nano), ""), humancheck.ErrFailed, humancheck.ReasonRefused)
	wantKind(t, "an empty token", c.Verify(ctx, "", ""), humancheck.ErrFailed, humancheck.ReasonMalformed)
	calls := sp.Calls()
	wantKind(t, "an oversized token", c.Verify(ctx, strings.Repeat("a", humancheck.MaxTokenBytes+1), ""), humancheck.ErrFailed, humancheck.ReasonMalformed)
	if sp.Calls() != calls {
		t.Error("an oversized token was sent to the provider")
	}

	sp.SetMode(humanchecktest.Refuse)
	err := c.Verify(ctx, sp.Issue(), "")
	wantKind(t, "a refusal", err, humancheck.ErrFailed, humancheck.ReasonRefused)
	var e *humancheck.Error
	if !errors.As(err, &e) || len(e.Codes) != 1 || e.Codes[0] != "invalid-input-response" {
		t.Errorf("a refusal's codes: %+v, want [invalid-input-response]", e)
	}
	sp.SetMode(humanchecktest.Accept)

	sp.SetHostname("elsewhere.example")
	wantKind(t, "a token solved on another site", c.Verify(ctx, sp.Issue(), ""), humancheck.ErrFailed, humancheck.ReasonHostname)
	sp.SetHostname("SHOP.example")
	wantKind(t, "a hostname in other case", c.Verify(ctx, sp.Issue(), ""), nil, "")
	if h := c.Health(); !h.Healthy || h.ConsecutiveFailures != 0 || h.LastOK.IsZero() || h.Provider != "turnstile" {
		t.Errorf("health after judged calls: %+v", h)
	}
}

// Twenty requests racing with one token: exactly one passes.
func TestVerifyOnceUnderRace(t *testing.T) {
	t.Parallel()
	sp := humanchecktest.NewServer(t)
	c, _ := newChecker(t, sp, nil)
	for round := range 3 {
		tok := sp.Issue()
		var ok, reused, other atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 20 {
			wg.Go(func() {
				<-start
				switch err := c.Verify(context.Background(), tok, ""); {
				case err == nil:
					ok.Add(1)
				case errors.Is(err, humancheck.ErrFailed):
					reused.Add(1)
				default:
					other.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if ok.Load() != 1 || reused.Load() != 19 || other.Load() != 0 {
			t.Fatalf("round %d: %d passed, %d failed, %d other; want 1, 19, 0", round, ok.Load(), reused.Load(), other.Load())
		}
	}
	if sp.Calls() != 3 {
		t.Errorf("the provider was asked %d times for 3 tokens, want 3: a replay in flight reached it", sp.Calls())
	}
}

func TestUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		mode   humanchecktest.Mode
		reason string
	}{
		{"5xx", humanchecktest.Fail, humancheck.ReasonStatus},
		{"garbage", humanchecktest.Garbage, humancheck.ReasonUnparsable},
		{"timeout", humanchecktest.Hang, humancheck.ReasonTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			sp := humanchecktest.NewServer(t)
			chk, _ := newChecker(t, sp, func(o *humancheck.Options) { o.Timeout = 300 * time.Millisecond })
			tok := sp.Issue()
			sp.SetMode(c.mode)
			err := within(t, 20*time.Second, "a verification", func() error { return chk.Verify(ctx, tok, "") })
			wantKind(t, c.name, err, humancheck.ErrUnavailable, c.reason)

			// Nothing was judged: the token's mark is lifted, and it
			// passes once the provider is back.
			sp.SetMode(humanchecktest.Accept)
			wantKind(t, "the token once the provider is back", chk.Verify(ctx, tok, ""), nil, "")
		})
	}

	t.Run("caller's deadline", func(t *testing.T) {
		t.Parallel()
		sp := humanchecktest.NewServer(t)
		chk, _ := newChecker(t, sp, func(o *humancheck.Options) { o.Timeout = time.Minute })
		sp.SetMode(humanchecktest.Hang)
		cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		err := within(t, 20*time.Second, "a verification", func() error { return chk.Verify(cctx, sp.Issue(), "") })
		wantKind(t, "a caller that gives up", err, humancheck.ErrUnavailable, humancheck.ReasonTimeout)
	})

	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		sp := humanchecktest.NewServer(t)
		chk, _ := newChecker(t, sp, nil)
		sp.Close()
		wantKind(t, "a closed provider", chk.Verify(ctx, "standin.x", ""), humancheck.ErrUnavailable, humancheck.ReasonUnreachable)
	})

	t.Run("misconfigured", func(t *testing.T) {
		t.Parallel()
		sp := humanchecktest.NewServer(t)
		chk, out := newChecker(t, sp, func(o *humancheck.Options) { o.Secret = "not-the-secret" })
		wantKind(t, "a wrong secret", chk.Verify(ctx, sp.Issue(), ""), humancheck.ErrUnavailable, humancheck.ReasonMisconfig)
		if !strings.Contains(out.String(), "level=ERROR") {
			t.Errorf("a refused secret was not logged as an error:\n%s", out)
		}
	})
}

// A full pool answers at once, without asking the provider.
func TestPoolFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sp := humanchecktest.NewServer(t)
	c, _ := newChecker(t, sp, func(o *humancheck.Options) { o.MaxInFlight = 1; o.Timeout = time.Minute })
	sp.SetMode(humanchecktest.Hang)
	held, release := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- c.Verify(held, sp.Issue(), "") }()
	wait.For(t, 20*time.Second, "the first call to reach the provider", func() (bool, string) {
		n := sp.Calls()
		return n >= 1, fmt.Sprintf("%d provider calls", n)
	})
	err := within(t, 20*time.Second, "a call beyond the pool", func() error { return c.Verify(ctx, sp.Issue(), "") })
	wantKind(t, "a call beyond the pool", err, humancheck.ErrUnavailable, humancheck.ReasonBusy)
	if sp.Calls() != 1 {
		t.Errorf("%d provider calls, want 1: the call beyond the pool was sent", sp.Calls())
	}
	release()
	wantKind(t, "the held call, given up", <-first, humancheck.ErrUnavailable, humancheck.ReasonTimeout)
	sp.SetMode(humanchecktest.Accept)
	wantKind(t, "a call once the pool has room", c.Verify(ctx, sp.Issue(), ""), nil, "")
}

// Away after three unavailable answers; while away, one visitor every
// few seconds is asked, one call at a time goes to the provider, and a
// judged call brings it back.
func TestCircuit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sp := humanchecktest.NewServer(t)
	c, _ := newChecker(t, sp, nil)
	var mu sync.Mutex
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	humancheck.SetClock(c, func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	sp.SetMode(humanchecktest.Fail)
	for i := range 3 {
		if !c.Available() {
			t.Fatalf("unavailable after %d failures", i)
		}
		wantKind(t, "a failing provider", c.Verify(ctx, sp.Issue(), ""), humancheck.ErrUnavailable, humancheck.ReasonStatus)
	}
	h := c.Health()
	if h.Healthy || h.ConsecutiveFailures != 3 || h.LastFailure.IsZero() {
		t.Fatalf("health after 3 failures: %+v", h)
	}
	if c.Available() {
		t.Fatal("available at once after 3 failures")
	}
	advance(humancheck.ProbeEvery)
	if !c.Available() {
		t.Fatal("no visitor asked after the probe interval")
	}
	if c.Available() {
		t.Fatal("two visitors asked in one probe interval")
	}

	// While away: one call at a time reaches the provider.
	sp.SetMode(humanchecktest.Hang)
	held, release := context.WithCancel(ctx)
	probe := make(chan error, 1)
	calls := sp.Calls()
	go func() { probe <- c.Verify(held, sp.Issue(), "") }()
	wait.For(t, 20*time.Second, "the probe to reach the provider", func() (bool, string) {
		n := sp.Calls()
		return n != calls, fmt.Sprintf("%d provider calls, as before the probe", n)
	})
	wantKind(t, "a call beside the probe", c.Verify(ctx, sp.Issue(), ""), humancheck.ErrUnavailable, humancheck.ReasonCircuitOpen)
	release()
	<-probe

	sp.SetMode(humanchecktest.Refuse) // a refusal is a judgement: the provider is there
	wantKind(t, "the probe", c.Verify(ctx, sp.Issue(), ""), humancheck.ErrFailed, humancheck.ReasonRefused)
	if h := c.Health(); !h.Healthy || h.ConsecutiveFailures != 0 {
		t.Fatalf("health after a judged probe: %+v", h)
	}
	if !c.Available() || !c.Available() {
		t.Fatal("not available once back")
	}
}

// The secret is in no log line and no error, whatever happens; nor is a
// token.
func TestSecretNeverShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sp := humanchecktest.NewServer(t)
	c, out := newChecker(t, sp, func(o *humancheck.Options) { o.Timeout = 200 * time.Millisecond })
	var texts []string
	var tokens []string
	for _, m := range []humanchecktest.Mode{humanchecktest.Accept, humanchecktest.Refuse, humanchecktest.Fail, humanchecktest.Garbage, humanchecktest.Hang, humanchecktest.Accept} {
		sp.SetMode(m)
		tok := sp.Issue()
		tokens = append(tokens, tok)
		if err := c.Verify(ctx, tok, "192.0.2.9"); err != nil {
			texts = append(texts, err.Error())
		}
	}
	// A wrong secret, which the provider refuses: logged as an error.
	bad, badOut := newChecker(t, sp, func(o *humancheck.Options) { o.Secret = "wrong-secret-5ac1" })
	sp.SetMode(humanchecktest.Accept)
	if err := bad.Verify(ctx, sp.Issue(), ""); err != nil {
		texts = append(texts, err.Error())
	}
	// Options that fail validation.
	o := sp.Options(humancheck.HCaptcha, roomHost)
	o.VerifyURL = "http://provider.example/siteverify?secret=" + humanchecktest.Secret
	if err := o.Validate(); err == nil {
		t.Error("plain http to a remote host passed validation")
	} else {
		texts = append(texts, err.Error())
	}
	// Options as a log or an error would show them.
	shown := sp.Options(humancheck.Turnstile, roomHost)
	slog.New(slog.NewTextHandler(out, nil)).Info("options", "human_check", shown)
	texts = append(texts, fmt.Sprintf("%v %+v %s", shown, shown, shown))
	all := strings.Join(texts, "\n") + "\n" + out.String() + badOut.String()
	for _, s := range append([]string{humanchecktest.Secret, "wrong-secret-5ac1"}, tokens...) {
		if strings.Contains(all, s) {
			t.Errorf("%q shown:\n%s", s, all)
		}
	}
	if out.String() == "" {
		t.Error("nothing logged: the test shows nothing")
	}
}

func TestOptions(t *testing.T) {
	t.Parallel()
	good := humancheck.Options{Provider: humancheck.HCaptcha, SiteKey: "k", Secret: "s", Hosts: []string{"shop.example"}}
	for _, c := range []struct {
		name string
		edit func(*humancheck.Options)
		ok   bool
	}{
		{"good", func(*humancheck.Options) {}, true},
		{"off needs nothing", func(o *humancheck.Options) { *o = humancheck.Options{Provider: humancheck.Off} }, true},
		{"zero is off", func(o *humancheck.Options) { *o = humancheck.Options{} }, true},
		{"unknown provider", func(o *humancheck.Options) { o.Provider = "friendly" }, false},
		{"no site key", func(o *humancheck.Options) { o.SiteKey = "" }, false},
		{"no secret", func(o *humancheck.Options) { o.Secret = " " }, false},
		{"no host", func(o *humancheck.Options) { o.Hosts = nil }, false},
		{"a host with a port", func(o *humancheck.Options) { o.Hosts = []string{"shop.example:443"} }, false},
		{"an IPv6 host", func(o *humancheck.Options) { o.Hosts = []string{"2001:db8::1"} }, true},
		{"http to loopback", func(o *humancheck.Options) { o.VerifyURL = "http://127.0.0.1:9/siteverify" }, true},
		{"http to localhost", func(o *humancheck.Options) { o.ScriptURL = "http://localhost:9/widget.js" }, true},
		{"http elsewhere", func(o *humancheck.Options) { o.VerifyURL = "http://api.hcaptcha.com/siteverify" }, false},
		{"relative", func(o *humancheck.Options) { o.ScriptURL = "/widget.js" }, false},
		{"with a user", func(o *humancheck.Options) { o.VerifyURL = "https://u:p@api.hcaptcha.com/siteverify" }, false},
		{"negative timeout", func(o *humancheck.Options) { o.Timeout = -time.Second }, false},
		{"negative pool", func(o *humancheck.Options) { o.MaxInFlight = -1 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := good
			c.edit(&o)
			if err := o.Validate(); (err == nil) != c.ok {
				t.Errorf("Validate = %v, want ok %v", err, c.ok)
			}
		})
	}

	d := good.WithDefaults()
	if d.VerifyURL != "https://api.hcaptcha.com/siteverify" || d.ScriptURL != "https://js.hcaptcha.com/1/api.js" ||
		d.Timeout != humancheck.DefaultTimeout || d.MaxInFlight != humancheck.DefaultMaxInFlight {
		t.Errorf("defaults: %+v", d)
	}
	for _, c := range []struct {
		in   string
		want humancheck.Provider
		ok   bool
	}{
		{"", humancheck.Off, true}, {"off", humancheck.Off, true}, {"Turnstile", humancheck.Turnstile, true},
		{"hcaptcha", humancheck.HCaptcha, true}, {" recaptcha ", humancheck.ReCAPTCHA, true}, {"captcha", "", false},
	} {
		if p, err := humancheck.ParseProvider(c.in); p != c.want || (err == nil) != c.ok {
			t.Errorf("ParseProvider(%q) = %q, %v", c.in, p, err)
		}
	}
}

func TestPublicAndCSP(t *testing.T) {
	t.Parallel()
	sp := humanchecktest.NewServer(t)
	c, _ := newChecker(t, sp, nil)
	p := c.Public()
	if p != (humancheck.Public{Provider: "turnstile", SiteKey: humanchecktest.SiteKey, ScriptURL: sp.ScriptURL}) {
		t.Errorf("Public = %+v", p)
	}
	csp := p.CSP()
	if !contains(csp.Script, sp.URL) || !contains(csp.Frame, sp.URL) || !contains(csp.Connect, sp.URL) ||
		!contains(csp.Script, "https://challenges.cloudflare.com") {
		t.Errorf("CSP of a stand-in turnstile: %+v", csp)
	}
	real := humancheck.Public{Provider: "recaptcha", ScriptURL: "https://www.google.com/recaptcha/api.js"}.CSP()
	if !contains(real.Frame, "https://www.google.com/recaptcha/") || !contains(real.Script, "https://www.gstatic.com/recaptcha/") {
		t.Errorf("CSP of recaptcha: %+v", real)
	}
	if off := (humancheck.Public{Provider: "off"}).CSP(); off.Script != nil || off.Frame != nil {
		t.Errorf("CSP of off: %+v", off)
	}

	offc, err := humancheck.New(humancheck.Options{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if offc.Enabled() || offc.Available() {
		t.Error("an off checker is enabled or available")
	}
	wantKind(t, "an off checker", offc.Verify(context.Background(), "x", ""), humancheck.ErrUnavailable, humancheck.ReasonOff)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// FuzzVerifyToken presents tokens of every shape to a real stand-in:
// Verify never panics and passes none it did not issue.
func FuzzVerifyToken(f *testing.F) {
	for _, s := range []string{"", "a", "standin.", "standin.00", strings.Repeat("x", humancheck.MaxTokenBytes), strings.Repeat("y", humancheck.MaxTokenBytes+1),
		"secret=" + humanchecktest.Secret, "a&response=b", "\x00\n\r", "😀"} {
		f.Add(s)
	}
	sp := humanchecktest.Start
	srv, err := sp("127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	srv.SetHostname(roomHost)
	c, err := humancheck.New(srv.Options(humancheck.Turnstile, roomHost), redistest.Client(f), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		err := c.Verify(context.Background(), token, "")
		if err == nil {
			t.Fatalf("passed %q, never issued", token)
		}
		if !errors.Is(err, humancheck.ErrFailed) && !errors.Is(err, humancheck.ErrUnavailable) {
			t.Fatalf("Verify(%q) = %v: not a typed error", token, err)
		}
	})
}

func TestFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"WAITROOM_HUMAN_CHECK": "hcaptcha", "WAITROOM_HUMAN_CHECK_SITEKEY": " k ", "WAITROOM_HUMAN_CHECK_SECRET": "s",
		"WAITROOM_HUMAN_CHECK_SCRIPT_URL": "https://assets.shop.example/hcaptcha.js",
	}
	o, err := humancheck.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	o.Hosts = []string{"shop.example"}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	d := o.WithDefaults()
	if d.Provider != humancheck.HCaptcha || d.SiteKey != "k" || d.VerifyURL != "https://api.hcaptcha.com/siteverify" || d.ScriptURL != "https://assets.shop.example/hcaptcha.js" {
		t.Errorf("from the environment: %+v", d)
	}
	if o, err := humancheck.FromEnv(func(string) string { return "" }); err != nil || o.Provider != humancheck.Off || o.Validate() != nil {
		t.Errorf("an empty environment: %+v, %v", o, err)
	}
	if _, err := humancheck.FromEnv(func(k string) string { return map[string]string{"WAITROOM_HUMAN_CHECK": "captcha"}[k] }); err == nil {
		t.Error("an unknown provider was read")
	}
}
