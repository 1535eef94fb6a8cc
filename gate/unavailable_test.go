package gate_test

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
)

// awayGate is a closed gate whose waitroom's verify endpoint is down, and
// known to be: a pass holder's check failed.
func awayGate(t *testing.T) http.Handler {
	t.Helper()
	w := newWaitroom(t)
	f := newFlakyVerify(t, w)
	fg := newFailGate(t, w, f, gate.FailClosed)
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	if got := what(get(fg.h, "/order", "Authorization", "Bearer "+valid)); got != "order:a:holder" {
		t.Fatalf("up: %s", got)
	}
	f.down.Store(true)
	// Until the pass's recheck is due, a browser without a pass is still
	// sent to the waiting page; the recheck finds the waitroom away.
	if got := what(get(fg.h, "/order", "Accept", "text/html")); got != "waiting" {
		t.Fatalf("before the recheck: %s", got)
	}
	fg.clock.Step(failRecheck)
	get(fg.h, "/order", "Authorization", "Bearer "+valid)
	if got := get(fg.h, "/order", "Accept", "text/html"); got.Code != http.StatusServiceUnavailable {
		t.Fatalf("the gate did not see the waitroom away: %s", what(got))
	}
	return fg.h
}

// While the waitroom cannot check passes, a browser without one gets the
// styled page in its language (Accept-Language, as the waiting page
// chooses it), which tries again by itself: 503 with Retry-After, its own
// policy allowing its inline style and script, nothing else inline. A
// client that asks for JSON, a script's fetch and a POST get JSON with
// code unavailable.
func TestUnavailablePage(t *testing.T) {
	h := awayGate(t)
	for _, c := range []struct{ accept, lang, title string }{
		{"ko-KR,ko;q=0.9,en;q=0.8", "ko", "대기열을 잠시 이용할 수 없습니다"},
		{"en-US,en;q=0.9", "en", "The waiting room is briefly unavailable"},
		{"", "en", "The waiting room is briefly unavailable"},
		{"ja", "ja", "順番待ちが一時的にご利用いただけません"},
		{"zh-TW", "zh-Hant", "排隊服務暫時無法使用"},
		{"zh-CN", "zh-Hans", "排队服务暂时不可用"},
		{"es-MX", "es", "La sala de espera no está disponible por un momento"},
	} {
		r := get(h, "/order", "Accept", "text/html,application/xhtml+xml,*/*;q=0.8", "Accept-Language", c.accept, "Sec-Fetch-Mode", "navigate")
		body := r.Body.String()
		if what(r) != "unavailable page" || r.Header().Get("Content-Language") != c.lang ||
			!strings.Contains(body, `<html lang="`+c.lang+`">`) || !strings.Contains(body, "<h1 id=\"wr-title\">"+c.title+"</h1>") {
			t.Errorf("Accept-Language %q: %d %v %.300s", c.accept, r.Code, r.Header(), body)
		}
		csp := r.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'sha256-") || !strings.Contains(csp, "style-src 'sha256-") || strings.Contains(csp, "unsafe") {
			t.Errorf("CSP %q", csp)
		}
		if !strings.Contains(body, `<script>`) || !strings.Contains(body, `class="spinner"`) || strings.Contains(body, "<link") {
			t.Errorf("not the self-contained styled page with its script: %.300s", body)
		}
	}
	for _, c := range []struct {
		name, method string
		header       []string
	}{
		{"asks for JSON", "GET", []string{"Accept", "application/json", "Accept-Language", "ko"}},
		{"a script's fetch", "GET", []string{"Accept", "*/*", "Sec-Fetch-Mode", "cors"}},
		{"POST", "POST", []string{"Accept", "text/html"}},
	} {
		rec := send(h, c.method, "/order", c.header...)
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 503 || body.Error.Code != "unavailable" || rec.Header().Get("Retry-After") == "" {
			t.Errorf("%s: %d %q %v", c.name, rec.Code, rec.Body.String(), err)
		}
	}
}

// Generated requests (method, Accept, Sec-Fetch-Mode, Authorization,
// Accept-Language, with a fixed seed): each gets the page or JSON, never
// anything else, and the page only when navigating without asking for
// JSON; the page's language is always one of the six.
func TestUnavailableGenerated(t *testing.T) {
	h := awayGate(t)
	rng := rand.New(rand.NewPCG(26, 16))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	for range 500 {
		method := pick("GET", "HEAD", "POST", "PUT")
		accept := pick("", "text/html", "*/*", "application/json", "text/html, application/json;q=0.1", "image/*", "<x>")
		mode := pick("", "navigate", "cors", "no-cors", "same-origin", "websocket", "NAVIGATE")
		auth := pick("", "", "", "Basic eA==")
		lang := pick("", "ko", "zh-Hant-TW", "xx", "*", "en;q=0, ko;q=0.1", "<script>")
		req := httptest.NewRequest(method, "/order", nil)
		for _, kv := range [][2]string{{"Accept", accept}, {"Sec-Fetch-Mode", mode}, {"Authorization", auth}, {"Accept-Language", lang}} {
			if kv[1] != "" {
				req.Header.Set(kv[0], kv[1])
			}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		page := (method == "GET" || method == "HEAD") && auth == "" && !strings.Contains(accept, "application/json") && (mode == "" || mode == "navigate")
		ct := rec.Header().Get("Content-Type")
		if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("%s %q %q %q: %d", method, accept, mode, auth, rec.Code)
		}
		if page != strings.HasPrefix(ct, "text/html") || !page && !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s Accept %q Sec-Fetch-Mode %q Authorization %q: %s, want the page: %v", method, accept, mode, auth, ct, page)
		}
		if l := rec.Header().Get("Content-Language"); page && (l == "" || !strings.Contains(" en ko ja zh-Hans zh-Hant es ", " "+l+" ")) {
			t.Fatalf("language %q", rec.Header().Get("Content-Language"))
		}
		if strings.Contains(rec.Body.String(), "<script>alert") || strings.Contains(rec.Body.String(), "<x>") {
			t.Fatalf("the request came back in the answer")
		}
	}
}

// A gate given no Unavailable page answers a browser with a plain one of
// its own: 503, Retry-After, nothing a strict policy blocks, and a
// refresh, so the visitor is never left on a dead page; JSON stays JSON.
func TestUnavailablePlainByDefault(t *testing.T) {
	w := newWaitroom(t)
	f := newFlakyVerify(t, w)
	fg := newFailGateWith(t, w, f, gate.FailClosed, nil)
	valid := w.issue(t, "default", time.Now().Add(time.Hour))
	get(fg.h, "/order", "Authorization", "Bearer "+valid)
	f.down.Store(true)
	fg.clock.Step(failRecheck)
	get(fg.h, "/order", "Authorization", "Bearer "+valid)
	r := get(fg.h, "/order", "Accept", "text/html", "Sec-Fetch-Mode", "navigate")
	body := r.Body.String()
	if r.Code != http.StatusServiceUnavailable || r.Header().Get("Retry-After") == "" ||
		r.Header().Get("Content-Security-Policy") != "default-src 'none'" ||
		!strings.Contains(body, `<meta http-equiv="refresh"`) || strings.Contains(body, "<script") {
		t.Fatalf("plain page: %d %v %s", r.Code, r.Header(), body)
	}
	if j := get(fg.h, "/order", "Accept", "application/json"); j.Code != http.StatusServiceUnavailable || !strings.Contains(j.Body.String(), `"unavailable"`) {
		t.Fatalf("JSON: %d %s", j.Code, j.Body.String())
	}
}
