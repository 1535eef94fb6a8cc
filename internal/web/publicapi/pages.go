package publicapi

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/i18n"
	"github.com/waitroom/waitroom/internal/web/outage"
	"github.com/waitroom/waitroom/internal/web/pages"
)

// The pages: the waiting page (rendered by Options.Pages), the back
// office page, the home redirect and the favicon, served from
// Options.Static (web/static), and the operator's files under
// /_waitroom/site/.

func (s *API) Home(w http.ResponseWriter, r *http.Request) {
	http.Redirect(w, r, "/q/"+url.PathEscape(s.store.Queues()[0]), http.StatusFound)
}

func (s *API) WaitingPage(w http.ResponseWriter, r *http.Request) {
	if !s.store.Has(chi.URLParam(r, "queue")) {
		if wantsHTML(r) {
			// A person followed a wrong link: a page, not raw JSON.
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(unknownQueuePage))
			return
		}
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	// The page sends an admitted user to ?return=: only ever a path on
	// this site (the page checks too).
	if ret, has := r.URL.Query()["return"]; has && (len(ret) != 1 || !reqcheck.SameSitePath(ret[0])) {
		s.fail(w, r, errInvalidReturn)
		return
	}
	q := chi.URLParam(r, "queue")
	text, err := s.store.PageText(r.Context(), q)
	if err != nil {
		s.pageFailed(w, r, q, err)
		return
	}
	lang := i18n.FromRequest(r)
	var page bytes.Buffer
	if err := s.pages.Render(&page, q, lang, pages.Text{Title: text.Title, Message: text.Message}); err != nil {
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Type", "text/html; charset=utf-8")
	// The page is in the language the request asked for.
	h.Set("Vary", "Accept-Language, Cookie")
	h.Set("Content-Language", lang)
	if s.waitingCSP != nil {
		h["Content-Security-Policy"] = s.waitingCSP // built once, never written into
	}
	_, _ = w.Write(page.Bytes())
}

// VerifyDrawPage answers /q/{queue}/verify: the draw's verifier page
// (web/static/verify-draw.html), which recomputes the queue's last draw
// in the browser from GET .../draw (docs/DRAW.md). What the waiting page
// knew comes in the address's fragment, which never reaches a server.
func (s *API) VerifyDrawPage(w http.ResponseWriter, r *http.Request) {
	if !s.store.Has(chi.URLParam(r, "queue")) {
		s.fail(w, r, queue.ErrUnknownQueue)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.static, "verify-draw.html")
}

// pageFailed answers a waiting page the store could not give its text:
// while Redis is away, a browser gets the page that says so in its
// language and tries again by itself (internal/web/outage), not raw JSON;
// a client that asks for JSON, and every other error, gets fail's answer.
func (s *API) pageFailed(w http.ResponseWriter, r *http.Request, q string, err error) {
	if httpkit.Classify(err) != httpkit.ErrUnavailable || !outage.WantsPage(r) {
		s.fail(w, r, err)
		return
	}
	s.kit.LogFailure(r, httpkit.ErrUnavailable, err)
	v := outage.Joining
	if c, err := r.Cookie(s.placeCookiePrefix + q); err == nil && c.Value != "" {
		v = outage.InLine
	}
	outage.Write(w, r, v)
}

// unknownQueuePage answers /q/{queue} for a queue that does not exist.
const unknownQueuePage = `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>No such waiting line</title>
<link rel="stylesheet" href="/_waitroom/static/style.css"></head>
<body class="page-waiting"><main class="card"><h1>No such waiting line</h1>
<p>This waiting line does not exist. Please check the address, or go back to the site that sent you here.</p>
<p lang="ko">존재하지 않는 대기열입니다. 주소를 확인하거나, 이 페이지로 보낸 사이트로 돌아가 주세요.</p>
</main></body></html>`

// wantsHTML reports whether the client asked for a page (a browser).
func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// SiteFile serves the operator's files (WAITROOM_PAGES_DIR) under
// /_waitroom/site/.
func (s *API) SiteFile(w http.ResponseWriter, r *http.Request) {
	s.pages.ServeSite(w, r, func(w http.ResponseWriter, r *http.Request) { s.fail(w, r, httpkit.ErrNotFound) })
}

func (s *API) Favicon(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=86400")
	http.ServeFileFS(w, r, s.static, "favicon.ico")
}

func (s *API) adminPage(w http.ResponseWriter, r *http.Request) {
	s.page(w, r, "admin.html")
}

func (s *API) page(w http.ResponseWriter, r *http.Request, name string) {
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, s.static, name)
}
