package e2e

import (
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestAdminSignInWhileRedisIsAway: with the right token while the store
// cannot be reached, the sign-in page says so, keeps the token in the
// field and does not mark it wrong; once Redis is back, the same token,
// unchanged in the field, signs in.
func TestAdminSignInWhileRedisIsAway(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	link := newRedisLink(t, redistest.Addr(t))
	rdb := redis.NewClient(&redis.Options{Addr: link.addr(), MaxRetries: -1, DialTimeout: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	s := newStack(t, stackOptions{settings: fastTicks(2), redis: rdb})
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden`)

	link.cut()
	b.do("sign in while Redis is away",
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(10*time.Second, "the sign-in error", `!document.getElementById('login-error').hidden`)
	if msg := b.text("#login-error"); !strings.Contains(msg, "cannot reach its store") {
		t.Errorf("#login-error = %q, want that the store cannot be reached", msg)
	}
	if v := eval[string](b, `document.getElementById('token').value`); v != adminToken {
		t.Errorf("the token field holds %q after an outage, want the token typed", v)
	}
	if inv := eval[string](b, `document.getElementById('token').getAttribute('aria-invalid')`); inv == "true" {
		t.Error("the token is marked wrong while Redis is away")
	}
	b.screenshot("login-store-away")

	link.restore()
	b.do("sign in again", chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(15*time.Second, "the dashboard", `document.body.dataset.state === 'signed-in'`)
}

// redisLink is a TCP relay to a real Redis that the test can cut, as a
// network between the service and its store that goes away: every
// connection through it is closed and new ones are refused until
// restore.
type redisLink struct {
	t      *testing.T
	target string
	ln     net.Listener

	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newRedisLink(t *testing.T, target string) *redisLink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &redisLink{t: t, target: target, ln: ln}
	t.Cleanup(func() { _ = ln.Close(); l.cut() })
	go l.serve()
	return l
}

func (l *redisLink) addr() string { return l.ln.Addr().String() }

func (l *redisLink) serve() {
	for {
		c, err := l.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		l.mu.Lock()
		down := l.down
		l.mu.Unlock()
		if down {
			_ = c.Close() // a store that is away
			continue
		}
		up, err := net.Dial("tcp", l.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		l.mu.Lock()
		l.conns = append(l.conns, c, up)
		l.mu.Unlock()
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

// cut closes every connection and refuses new ones.
func (l *redisLink) cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.down = true
	for _, c := range l.conns {
		_ = c.Close()
	}
	l.conns = nil
}

// restore lets connections through again.
func (l *redisLink) restore() {
	l.mu.Lock()
	l.down = false
	l.mu.Unlock()
}
