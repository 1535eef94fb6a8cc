package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/web/pages"
	"github.com/waitroom/waitroom/internal/web/soldout"
)

// While a sale is closed, waitroom's reverse-proxy gate shows those
// without a pass the sold-out page, 410, in their language and in the
// site's own template (WAITROOM_PAGES_DIR), never a redirect into the
// line; a script gets 410 sale_closed as JSON; a bad pass cookie is
// dropped and gets the page too; a valid pass goes through to the order
// page. Reopened, the gate sends people to the waiting page again. Through
// the real router and gate, on real Redis, the snapshot read as each tick
// reads it.
func TestGateSoldOutPage(t *testing.T) {
	t.Parallel()
	up := newUpstream(t)
	upURL, _ := url.Parse(up.srv.URL)
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	name := fmt.Sprintf("so%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	// The site's template: the sold-out page is its waiting page, closed.
	dir := t.TempDir()
	site := `<!doctype html><html lang="{{.Lang}}"><body class="site-template">` +
		`{{if .Closed}}<h1 id="sold">{{.Messages.closedTitle}}</h1><p id="said">{{.ClosedMessage}}</p><p id="when">{{.ReopensAt}}</p>{{end}}{{.Script}}</body></html>`
	if err := os.WriteFile(filepath.Join(dir, "waiting.html"), []byte(site), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs, err := pages.Messages()
	if err != nil {
		t.Fatal(err)
	}
	pgs, err := pages.New(pages.Options{Project: pages.ProjectFS(), Messages: msgs, Dir: dir, Queues: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	uses, err := passledger.New(rdb, passledger.DefaultMaxClients, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	g, err := proxy.NewGate(context.Background(), proxy.GateOptions{
		Queue: name, Passes: passes, Admissions: store, InsecureCookie: true, Uses: uses,
		SoldOut: soldout.New(store, pgs),
	})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWithStore(t, rdb, store, name, Options{Places: places, Passes: passes, Gate: g, AdminToken: adminToken, ClientIP: behindProxy(t),
		Pages: pgs, Upstream: upstreamProxy(upURL, 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)})
	ctx := context.Background()
	snapshot := func() { // as the scheduler does after each tick
		t.Helper()
		if err := store.RefreshSnapshot(ctx, name, true); err != nil {
			t.Fatal(err)
		}
	}
	tk := e.admittedPass()
	e.enterAnon() // waits
	snapshot()
	if r := e.do("GET", "/order", "", "Accept", "text/html"); r.status != http.StatusSeeOther {
		t.Fatalf("open sale, no pass: %d, want 303 to the waiting page", r.status)
	}

	reopens := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	auth := []string{"Authorization", "Bearer " + adminToken}
	if r := e.do("POST", "/admin/v1/queues/"+name+"/close", `{"message":{"en":"Sold out, sorry.","ko":"매진되었습니다."},"reopens_at":"`+reopens+`"}`, auth...); r.status != 200 {
		t.Fatalf("close: %d %s", r.status, r.body)
	}
	snapshot()

	for _, tc := range []struct{ lang, title, message string }{
		{"ko-KR,ko;q=0.9", "매진", "매진되었습니다."},
		{"en-US", "Sold out", "Sold out, sorry."},
		{"ja", "", "Sold out, sorry."}, // no Japanese message: the English one
	} {
		r := e.do("GET", "/order?event=7", "", "Accept", "text/html", "Accept-Language", tc.lang)
		body := string(r.body)
		if r.status != http.StatusGone || r.header.Get("Location") != "" || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("%s: %d (Location %q, Cache-Control %q), want 410 in place", tc.lang, r.status, r.header.Get("Location"), r.header.Get("Cache-Control"))
		}
		if !strings.Contains(body, `class="site-template"`) || !strings.Contains(body, `<h1 id="sold">`+tc.title) || !strings.Contains(body, `<p id="said">`+tc.message+`</p>`) ||
			!strings.Contains(body, `<p id="when">`+reopens+`</p>`) || !strings.Contains(body, `"closed":{"message":{`) {
			t.Errorf("%s: the page is not the site's, closed, with the message: %s", tc.lang, body)
		}
		lang := r.header.Get("Content-Language")
		if !strings.Contains(body, `<html lang="`+lang+`">`) || !strings.HasPrefix(tc.lang, lang) {
			t.Errorf("%s: Content-Language %q", tc.lang, lang)
		}
		if r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: no CSP on the sold-out page", tc.lang)
		}
	}
	// A script: the JSON an enter gets.
	r := e.do("GET", "/order", "", "Accept", "application/json", "Accept-Language", "ko")
	wantError(t, r, http.StatusGone, "sale_closed")
	var body struct {
		Error struct{ Message, ReopensAt string } `json:"error"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error.Message != "매진되었습니다." {
		t.Errorf("JSON sold out: %s", r.body)
	}
	// A bad pass cookie goes, and its holder sees the page.
	r = e.do("GET", "/order", "", "Accept", "text/html", "Cookie", e.passCookieName()+"=forged")
	if r.status != http.StatusGone || !strings.Contains(strings.Join(r.header.Values("Set-Cookie"), ";"), e.passCookieName()+"=;") {
		t.Errorf("bad cookie: %d, Set-Cookie %q", r.status, r.header.Values("Set-Cookie"))
	}
	if n := up.count(); n != 0 {
		t.Fatalf("%d requests without a pass reached the order page", n)
	}
	// An admitted person keeps going.
	r = e.do("GET", "/order", "", passCookie(e, tk.Pass)...)
	if r.status != 200 || !strings.Contains(string(r.body), "order page") || up.count() != 1 {
		t.Fatalf("with a pass while closed: %d %s (upstream saw %d)", r.status, r.body, up.count())
	}

	if r := e.do("POST", "/admin/v1/queues/"+name+"/reopen", "", auth...); r.status != 200 {
		t.Fatalf("reopen: %d %s", r.status, r.body)
	}
	snapshot()
	if r := e.do("GET", "/order", "", "Accept", "text/html"); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/q/"+name) {
		t.Fatalf("reopened, no pass: %d to %q, want 303 to the waiting page", r.status, r.header.Get("Location"))
	}
}
