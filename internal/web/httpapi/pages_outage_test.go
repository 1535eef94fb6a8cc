package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/outage"
)

// /q/{queue} while Redis is away: a browser gets the page that says so in
// its language and tries again by itself (503, Retry-After), which
// promises a kept place only to a browser holding one (the place cookie);
// a client that asks for JSON, or a script's fetch, gets the JSON 503 with
// code unavailable; and once Redis is back the waiting page is served
// again.
func TestWaitingPageRedisAway(t *testing.T) {
	ctr, rdb := outageRedis(t)
	e := newEnv(t, rdb, slow, 500*time.Millisecond, Options{})
	path := "/q/" + e.queue
	browser := func(lang string, more ...string) []string {
		return append([]string{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8", "Accept-Language", lang, "Sec-Fetch-Mode", "navigate"}, more...)
	}
	if r := e.do("GET", path, "", browser("ko")...); r.status != 200 {
		t.Fatalf("Redis up: %d", r.status)
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

	// The page's text is kept for queue.TextCacheTTL: until that runs
	// out, the waiting page is still served.
	wait.For(t, 30*time.Second, "the waiting page to give way to 503 with Redis paused", func() (bool, string) {
		r := e.do("GET", path, "", browser("ko")...)
		return r.status == 503, fmt.Sprintf("status %d", r.status)
	})

	placeCookie := e.placeCookieName() + "=v2.anything"
	for _, c := range []struct {
		name   string
		header []string
		lang   string
		says   string // a phrase of the body's message
	}{
		{"Korean, no place", browser("ko-KR,ko;q=0.9"), "ko", "대기열이 복구되면"},
		{"Korean, a place", browser("ko", "Cookie", placeCookie), "ko", "대기 순번은 그대로 유지됩니다"},
		{"English, a place", browser("en-US", "Cookie", placeCookie), "en", "Your place in line is kept."},
		{"no Accept at all", []string{"Accept-Language", "es"}, "es", "Podrás entrar en la fila"},
	} {
		r := e.do("GET", path, "", c.header...)
		body := string(r.body)
		after, _ := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != 503 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") ||
			after < outage.FirstWait || after > outage.FirstWait+outage.FirstSpread ||
			r.header.Get("Content-Language") != c.lang || !strings.Contains(body, `<html lang="`+c.lang+`">`) ||
			!strings.Contains(body, c.says) || !strings.Contains(body, `data-state="unavailable"`) {
			t.Errorf("%s: %d %v %.400s", c.name, r.status, r.header, body)
		}
		// The page's own policy, not the routes' (which allows no inline
		// script or style, and would stop the page's).
		if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'sha256-") {
			t.Errorf("%s: CSP %q", c.name, csp)
		}
	}
	for _, c := range []struct {
		name   string
		header []string
	}{
		{"asks for JSON", []string{"Accept", "application/json", "Accept-Language", "ko"}},
		{"a script's fetch", []string{"Accept", "*/*", "Sec-Fetch-Mode", "cors"}},
	} {
		r := e.do("GET", path, "", c.header...)
		wantError(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", c.name)
		}
	}

	if err := ctr.Unpause(context.Background()); err != nil {
		t.Fatal(err)
	}
	paused = false
	wait.For(t, 30*time.Second, "the waiting page to come back", func() (bool, string) {
		r := e.do("GET", path, "", browser("ko")...)
		return r.status == 200 && strings.Contains(string(r.body), `id="wr-page"`), fmt.Sprintf("%d %.200s", r.status, r.body)
	})
}
