package handoff

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// countingScripter counts the scripts a service runs in Redis.
type countingScripter struct {
	redis.Scripter
	n atomic.Int64
}

func (c *countingScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	c.n.Add(1)
	return c.Scripter.EvalSha(ctx, sha1, keys, args...)
}

func (c *countingScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	c.n.Add(1)
	return c.Scripter.Eval(ctx, script, keys, args...)
}

const publicURL = "https://waitroom.example"

// A hand-over's QR code: the link on the public URL, drawn
// once (asked again, and by five at once: no Redis call, the same
// picture), limited per place with no Redis call once over the limit,
// only for the member's own live hand-over, and off without a public URL.
func TestQRDrawnOnceAndLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	rdb := &countingScripter{Scripter: e.rdb}
	svc := New(rdb, e.store, e.tracker, 5*time.Second)
	if _, err := svc.QR(ctx, q, "b", newToken(), ""); !errors.Is(err, ErrNoPublicURL) {
		t.Fatalf("without a public URL: %v", err)
	}
	if err := svc.SetPublicURL(publicURL + "/"); err != nil {
		t.Fatal(err)
	}
	e.line(t, q, "a", "b", "c")
	hb, err := svc.Create(ctx, q, "b", 0)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := svc.Create(ctx, q, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	want, err := QR(publicURL + "/q/" + url.PathEscape(q) + "?handoff=" + hb.Token)
	if err != nil {
		t.Fatal(err)
	}

	// Five at once, within the place's burst: one Redis call, one picture.
	if err := svc.Check(ctx, q, "b", hb.Token); err != nil { // the script loaded: one call from now on
		t.Fatal(err)
	}
	before := rdb.n.Load()
	var wg sync.WaitGroup
	got := make([][]byte, QRPerPlace)
	errs := make([]error, QRPerPlace)
	for i := range QRPerPlace {
		wg.Go(func() { got[i], errs[i] = svc.QR(ctx, q, "b", hb.Token, "client-1") })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || !bytes.Equal(got[i], want) {
			t.Fatalf("QR %d: %v, the picture of the public link: %v", i, errs[i], bytes.Equal(got[i], want))
		}
	}
	if n := rdb.n.Load() - before; n != 1 {
		t.Errorf("%d at once: %d Redis calls, want 1", QRPerPlace, n)
	}
	if n := svc.qr.cache.len(); n != 1 {
		t.Errorf("%d pictures kept, want 1", n)
	}

	// Over the place's limit: refused with a wait, and no Redis call.
	before = rdb.n.Load()
	start := time.Now()
	limited := 0
	for range 3 * QRPerPlace {
		_, err := svc.QR(ctx, q, "b", hb.Token, "client-1")
		var retry *queue.Retry
		switch {
		case errors.As(err, &retry) && errors.Is(err, queue.ErrRateLimited):
			if retry.After <= 0 || retry.After > QRPlaceEvery {
				t.Errorf("retry after %s", retry.After)
			}
			limited++
		case err != nil:
			t.Fatal(err)
		}
	}
	if most := 3*QRPerPlace - 1 - int(time.Since(start)/QRPlaceEvery); limited < most {
		t.Errorf("%d of %d over the burst refused, want at least %d", limited, 3*QRPerPlace, most)
	}
	if n := rdb.n.Load() - before; n != 0 {
		t.Errorf("over the limit: %d Redis calls, want 0", n)
	}

	// Another member's token, a token that is none: invalid.
	if _, err := svc.QR(ctx, q, "c", "not-a-token", "client-1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a malformed token: %v", err)
	}
	if _, err := svc.QR(ctx, q, "a", hc.Token, "client-1"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a asks for c's picture: %v", err)
	}
	if _, err := svc.QR(ctx, "nope", "c", hc.Token, "client-1"); !errors.Is(err, queue.ErrUnknownQueue) {
		t.Errorf("unknown queue: %v", err)
	}
}

// The limits alone: a client's burst over many places, then refused for
// at most one refill, without using up the places it was refused for.
func TestQRLimitsPerClient(t *testing.T) {
	t.Parallel()
	l := newQRLimits()
	start := time.Now()
	for i := range QRPerClient {
		if wait := l.take("q", "m"+string(rune('A'+i%26))+strings.Repeat("x", i/26), "c"); wait != 0 {
			if time.Since(start) < QRClientEvery {
				t.Fatalf("place %d within the client's burst: wait %s", i, wait)
			}
		}
	}
	wait := l.take("q", "fresh", "c")
	if elapsed := time.Since(start); elapsed < QRClientEvery && (wait <= 0 || wait > QRClientEvery) {
		t.Fatalf("over the client's burst: wait %s", wait)
	}
	// The place the client was refused for still has its whole burst.
	for i := range QRPerPlace {
		if wait := l.take("q", "fresh", "other-"+string(rune('a'+i))); wait != 0 {
			t.Fatalf("the refused place's picture %d: wait %s", i, wait)
		}
	}
	if wait := l.take("q", "fresh", "other-z"); wait <= 0 && time.Since(start) < QRPlaceEvery {
		t.Fatal("the place over its burst was not refused")
	}
}

// The limits and the pictures kept stay within their bounds however many
// places and clients ask.
func TestQRBounded(t *testing.T) {
	t.Parallel()
	l := newQRLimits()
	for i := range MaxQRLimited + 100 {
		k := string(rune(i)) + "-" + time.Duration(i).String()
		l.take("q", k, k)
	}
	if l.places.m.Len() > MaxQRLimited || l.clients.m.Len() > MaxQRLimited {
		t.Fatalf("%d places, %d clients kept, want at most %d", l.places.m.Len(), l.clients.m.Len(), MaxQRLimited)
	}
	c := newQRCache(10)
	until := time.Now().Add(time.Hour)
	for i := range 100 {
		png, err := c.get(context.Background(), string(rune('a'+i)), func() (qrEntry, error) {
			return qrEntry{png: []byte{byte(i)}, until: until}, nil
		})
		if err != nil || png[0] != byte(i) {
			t.Fatalf("%d: %v %v", i, png, err)
		}
	}
	if n := c.len(); n > 10 {
		t.Fatalf("%d pictures kept, want at most 10", n)
	}
	// An expired picture is drawn again.
	drawn := 0
	for range 2 {
		_, _ = c.get(context.Background(), "old", func() (qrEntry, error) {
			drawn++
			return qrEntry{png: []byte{1}, until: time.Now().Add(-time.Second)}, nil
		})
	}
	if drawn != 2 {
		t.Fatalf("an expired picture drawn %d times in two asks, want 2", drawn)
	}
}

// Generated public URLs: whatever CheckPublicURL accepts is an origin,
// and a QR link built on it stays on that origin whatever the queue and
// token.
func FuzzCheckPublicURL(f *testing.F) {
	for _, s := range []string{
		"https://waitroom.example", "https://waitroom.example/", "http://127.0.0.1:8080",
		"https://[::1]:8443", "https://a.example/path", "https://user:pw@a.example", "https://a.example?x=1",
		"https://a.example#f", "ftp://a.example", "//a.example", "https://", "https://a.example/%2e%2e",
		"https://a.example\\@evil.example", "https://evil.example%2f@a.example", "https://a.example:99999",
	} {
		f.Add(s, "default", newToken())
	}
	f.Fuzz(func(t *testing.T, raw, q, token string) {
		base, err := CheckPublicURL(raw)
		if err != nil {
			return
		}
		u, err := url.Parse(base)
		if err != nil || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q accepted as %q: not an origin (%v)", raw, base, err)
		}
		link, err := url.Parse(base + Path(q, token))
		if err != nil {
			t.Fatalf("link %q: %v", base+Path(q, token), err)
		}
		if link.Host != u.Host || link.Scheme != u.Scheme || link.User != nil {
			t.Fatalf("link %q leaves %q", link, base)
		}
		if got := link.Query().Get("handoff"); got != token {
			t.Fatalf("link %q carries %q, want %q", link, got, token)
		}
	})
}
