// Package soldout is the sold-out page waitroom's own gate shows while a
// queue's sale is closed (gate.SoldOut): to a browser without a pass, the
// queue's waiting page (the operator's template, if any) closed, with
// the operator's message in the visitor's language; to a script, the
// JSON error sale_closed an enter gets. Both are 410 Gone: the line takes
// nobody, and there is nothing to retry.
//
// What it knows is the replica's snapshot of the line (queue.Store.Line,
// read by the scheduler each tick, the same the public line document
// carries), so the page costs Redis nothing: it shows from the first
// snapshot read after the closing, within a tick, and while there is no
// fresh snapshot the gate refuses as usual (the waiting page then says
// the sale is closed at its enter).
package soldout

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/i18n"
	"github.com/waitroom/waitroom/internal/web/outage"
	"github.com/waitroom/waitroom/internal/web/pages"
)

// Store is what the page reads of the queues (*queue.Store): the line's
// snapshot, and the waiting page's text (cached by the store).
type Store interface {
	Line(queue string, now time.Time) (queue.Line, bool)
	PageText(ctx context.Context, queue string) (queue.Text, error)
}

// Page is the gate's sold-out page (gate.SoldOut).
type Page struct {
	store Store
	pages *pages.Pages

	mu       sync.Mutex
	rendered map[key]rendered // the pages of the snapshots last seen
}

type key struct{ queue, lang string }

// rendered is one page, good while its line's snapshot is the current one.
type rendered struct {
	line queue.Line
	page []byte
}

// New returns the sold-out page of store's queues, rendered by p.
func New(store Store, p *pages.Pages) *Page {
	return &Page{store: store, pages: p, rendered: map[key]rendered{}}
}

// csp is the waiting page's policy (the service's own scripts, styles
// and API), set here since the gate's answers do not pass the service's
// security headers.
var csp = []string{httpkit.ContentSecurityPolicy}

// ServeSoldOut answers r with queue's sold-out page, 410, while this
// replica's snapshot of the line says the sale is closed.
func (p *Page) ServeSoldOut(w http.ResponseWriter, r *http.Request, q string) bool {
	l, ok := p.store.Line(q, time.Now())
	if !ok || l.ClosedAt.IsZero() {
		return false
	}
	lang := i18n.FromRequest(r)
	h := w.Header()
	if !outage.WantsPage(r) {
		h.Set("Vary", "Accept-Language, Cookie")
		e := httpkit.SaleClosed(l.Closed, lang)
		httpkit.WriteJSON(w, e.Status, httpkit.ErrorBody{Error: httpkit.ErrorDetail{Code: e.Code, Message: e.Message, ReopensAt: e.ReopensAt}})
		return true
	}
	page, err := p.page(r.Context(), q, lang, l)
	if err != nil {
		return false // the text could not be read: refused as usual
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Accept-Language, Cookie")
	h.Set("Content-Language", lang)
	h["Content-Security-Policy"] = csp // built once, never written into
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusGone)
	if r.Method != http.MethodHead {
		_, _ = w.Write(page)
	}
	return true
}

// page is queue q's sold-out page in lang for the line l: rendered once
// per snapshot (a tick), however many people ask.
func (p *Page) page(ctx context.Context, q, lang string, l queue.Line) ([]byte, error) {
	k := key{q, lang}
	p.mu.Lock()
	got, ok := p.rendered[k]
	p.mu.Unlock()
	if ok && got.line.Same(l) {
		return got.page, nil
	}
	text, err := p.store.PageText(ctx, q)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	c := pages.Closing{Message: l.Closed.Message, ReopensAt: httpkit.RFC3339(l.Closed.ReopensAt)}
	if err := p.pages.RenderClosed(&b, q, lang, pages.Text{Title: text.Title, Message: text.Message}, c); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.rendered[k] = rendered{line: l, page: b.Bytes()}
	p.mu.Unlock()
	return b.Bytes(), nil
}
