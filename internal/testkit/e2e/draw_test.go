package e2e

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// serveDrawAs makes b's page get d as the draw's list (one page) in place
// of the server's answer: Chromium's fetch interception, for the tampered
// draws the verifier page must refuse. nil: the server's own again.
func serveDrawAs(b *browser, d *client.Draw) {
	b.t.Helper()
	if d == nil {
		if _, err := chromedp.Call(b.ctx, fetch.Disable, cdp.Empty{}); err != nil {
			b.t.Fatal(err)
		}
		return
	}
	body, err := json.Marshal(d)
	if err != nil {
		b.t.Fatal(err)
	}
	b.serveDraw.Store(body)
	b.interceptOnce.Do(func() {
		err = chromedp.Listen(b.ctx, func(ev any) {
			e, ok := ev.(*fetch.EventRequestPaused)
			if !ok {
				return
			}
			go func() {
				body, _ := b.serveDraw.Load().([]byte)
				_, _ = chromedp.Call(b.ctx, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: e.RequestID, ResponseCode: 200,
					ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}}, Body: body})
			}()
		})
	})
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: "*/api/v1/queues/*/draw*"}}}); err != nil {
		b.t.Fatal(err)
	}
}

// The draw's check link, end to end. In the pre-queue the page shows that
// the draw is sealed, with its commitment; once drawn it shows its own
// draw key and place, the list's, and a link to the verifier page, which
// recomputes the whole draw in Chromium (WebCrypto) and accepts it; served
// a list with two places swapped, a seed that is not the commitment's, or
// without this member, it refuses it.
func TestDrawCheckLink(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// Paused: the drawn places stay in line, where the page shows them.
	paused := true
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour},
		update: &queue.Update{Paused: &paused}})
	b := newBrowser(t, chromium)
	from := time.Now().Add(-time.Minute)
	opens := time.UnixMilli(time.Now().Add(10 * time.Second).UnixMilli())
	s.update(queue.Update{PrequeueFrom: &from, OpensAt: &opens})
	sealed, err := s.store.Draw(context.Background(), s.queue)
	if err != nil || len(sealed.Sealed) != 64 {
		t.Fatalf("the seal: %+v %v", sealed, err)
	}

	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(10*time.Second, "the draw, sealed", jsState("waiting")+` && `+jsShown("#draw-box")+` && `+jsShown("#draw-seal"))
	if got := b.text("#draw-commitment"); got != sealed.Sealed {
		t.Errorf("#draw-commitment = %q, the seal is %s", got, sealed.Sealed)
	}
	if txt := b.text("#draw-seal-text"); !strings.HasPrefix(txt, "The draw is sealed:") {
		t.Errorf("#draw-seal-text = %q", txt)
	}
	b.screenshot("draw-sealed")
	member := s.member(b)
	for i := range 6 {
		if _, err := s.store.Enter(context.Background(), s.queue, queue.Entry{Caller: queue.Caller{User: fmt.Sprintf("other-%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}

	// The opening: the page is told its draw key and place.
	b.waitJS(30*time.Second, "the drawn place", jsShown("#drawn-box"))
	d, err := s.store.Draw(context.Background(), s.queue)
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := hex.DecodeString(d.Last.Seed)
	key := hex.EncodeToString(queue.DrawKey(seed, member))
	if got := b.text("#drawn-key"); got != key {
		t.Errorf("#drawn-key = %q, HMAC-SHA256(seed, member) = %s", got, key)
	}
	real, err := client.FetchDraw(context.Background(), nil, s.url+"/api/v1/queues/"+s.queue+"/draw")
	if err != nil {
		t.Fatal(err)
	}
	place := int64(0)
	for _, e := range real.Entries {
		if e.DrawKey == key {
			place = e.Place
		}
	}
	if want := fmt.Sprintf("Your place in the draw: %d. Your draw key:", place); place == 0 || b.text("#drawn-text") != want {
		t.Errorf("#drawn-text = %q, want %q", b.text("#drawn-text"), want)
	}
	b.screenshot("drawn")

	// The link: the verifier page, with what the page knew.
	b.do("check it", chromedp.Click(chromedp.CSS("#drawn-check")))
	b.waitJS(30*time.Second, "the verifier's answer", `document.body.dataset.result === 'ok'`)
	if got := eval[string](b, `document.getElementById('verify-member').value`); got != member {
		t.Errorf("the verifier's member %q, want %q", got, member)
	}
	if got := eval[string](b, `document.getElementById('verify-commitment').value`); got != sealed.Sealed {
		t.Errorf("the verifier's commitment %q, want the one shown before the draw, %s", got, sealed.Sealed)
	}
	checks := eval[[]string](b, `[...document.querySelectorAll('#verify-checks li')].map((li) => li.textContent)`)
	want := []string{"✓ The seed revealed is the one sealed before the draw.", "✓ All 7 places follow the draw keys, lowest first.",
		fmt.Sprintf("✓ Your place, %d, is under your own draw key.", place)}
	if !slices.Equal(checks, want) {
		t.Errorf("the checks passed: %q, want %q", checks, want)
	}
	b.screenshot("verify-ok")

	// Tampered lists, served in place of the real one.
	swapped := real
	swapped.Entries = slices.Clone(real.Entries)
	swapped.Entries[1].DrawKey, swapped.Entries[4].DrawKey = swapped.Entries[4].DrawKey, swapped.Entries[1].DrawKey
	swapped.Entries[1].IDSHA256, swapped.Entries[4].IDSHA256 = swapped.Entries[4].IDSHA256, swapped.Entries[1].IDSHA256
	otherSeed := real
	otherSeed.DrawSeed = strings.Repeat("5a", 32)
	missing := real
	missing.Entries = nil
	for _, e := range real.Entries {
		if e.DrawKey != key {
			e.Place = int64(len(missing.Entries) + 1)
			missing.Entries = append(missing.Entries, e)
		}
	}
	missing.Count, missing.Lines = int64(len(missing.Entries)), []client.DrawLine{{Lane: "", Count: int64(len(missing.Entries))}}
	for _, c := range []struct {
		name string
		d    client.Draw
		why  string
	}{
		{"two places swapped", swapped, "the order is not lowest key first"},
		{"a seed not the commitment's", otherSeed, "not the commitment"},
		{"the member missing", missing, "your id is not in the draw"},
	} {
		serveDrawAs(b, &c.d)
		b.reload()
		b.waitJS(30*time.Second, c.name+" refused", `document.body.dataset.result === 'fail'`)
		if st := b.text("#verify-status"); !strings.HasPrefix(st, "The draw does not check out: ") || !strings.Contains(st, c.why) {
			t.Errorf("%s: #verify-status = %q, want it to say %q", c.name, st, c.why)
		}
	}
	b.screenshot("verify-fail")
	serveDrawAs(b, nil)
	b.reload()
	b.waitJS(30*time.Second, "the real draw again", `document.body.dataset.result === 'ok'`)
}

// drawIntercept is what serveDrawAs keeps per browser: the body it
// serves (base64), and that it listens.
type drawIntercept struct {
	interceptOnce sync.Once
	serveDraw     atomic.Value
}
