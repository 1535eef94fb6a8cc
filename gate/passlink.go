package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
)

// The pass-link exchange of a pass in ?wr_pass=: once, and only to this site.

// exchangePassLink takes a pass carried in ?wr_pass= on a request for room rm
// (nil: a path no route covers) whose path was sent as sent (escaped) and
// is now clean. The first exchange of a valid pass for rm's queue puts it
// into that queue's cookie and sends the browser to the same path without
// it (done); only ever to a path on this site, so a link cannot send
// anyone elsewhere. A pass is only ever taken on its own room's routes:
// on another room's it is refused like an invalid one, and on a path no
// route covers it is dropped. A pass already exchanged, or any pass on a
// request that is not a GET or HEAD, is dropped from the URL and the
// request goes on as if none had been given (r, not done).
func (g *Gate) exchangePassLink(w http.ResponseWriter, r *http.Request, rm *room, q url.Values, sent string) (*http.Request, bool) {
	token := q.Get("wr_pass")
	q.Del("wr_pass")
	clean := *r.URL
	clean.RawQuery = q.Encode()
	r2 := new(http.Request)
	*r2 = *r
	r2.URL = &clean
	if r2.RequestURI != "" {
		r2.RequestURI = clean.RequestURI()
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return r2, false
	}
	// The path as sent, not only as cleaned: "//evil.example/x" cleans to
	// a path on this site, but a link that says it is not one is refused.
	if !reqcheck.SameSitePath(sent) || !reqcheck.SameSitePath(clean.RequestURI()) {
		writeError(w, http.StatusBadRequest, "invalid_return", "a pass-link exchange only ever returns to a path on this site", "")
		return nil, true
	}
	if rm == nil {
		return r2, false // no room here: the pass opens nothing, and goes no further
	}
	c, ok, err := g.check(r.Context(), token, rm)
	switch {
	case errors.Is(err, ErrUsedElsewhere):
		g.refuse(w, r2, rm, usedElsewhere)
		return nil, true
	case err != nil:
		return g.cannotExchange(w, r, r2, rm, token)
	case !ok:
		g.refuse(w, r2, rm, noPass)
		return nil, true
	}
	first, err := g.passLinks.Claim(r.Context(), c.Queue, c.ID, c.Expires)
	if err != nil {
		g.reach.learn(r.Context(), false, err)
		return g.cannotExchange(w, r, r2, rm, token)
	}
	if !first {
		return r2, false
	}
	http.SetCookie(w, &http.Cookie{
		Name:     rm.cookie,
		Value:    token,
		Path:     "/",
		Expires:  c.Expires,
		HttpOnly: true,
		Secure:   g.secure,
		SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, clean.RequestURI(), http.StatusSeeOther)
	return nil, true
}

// cannotExchange answers a pass-link exchange of token, on a path of room rm, that
// the waiting room cannot make now (r2: the request without it): its
// exchange is single-use, which only the waiting room can tell. A pass
// that does not verify offline is refused as ever, and so is one for
// another room's queue (FailOpen: dropped, as no pass for rm). FailOpen
// sends the browser on to the same path without the pass (the request
// after it passes unchecked, and the waiting page sends the pass link
// again once the waiting room is back); the other modes answer
// unavailable, a page that reloads the same link until it is back.
func (g *Gate) cannotExchange(w http.ResponseWriter, r, r2 *http.Request, rm *room, token string) (*http.Request, bool) {
	if g.offline != nil {
		c, ok := g.offline.CheckOffline(token)
		if !ok || c.Queue != rm.queue && g.fail != FailOpen {
			g.refuse(w, r2, rm, noPass)
			return nil, true
		}
	}
	if g.fail == FailOpen {
		w.Header().Set("Cache-Control", "no-store")
		http.Redirect(w, r, r2.URL.RequestURI(), http.StatusSeeOther)
		return nil, true
	}
	g.unavailable(w, r)
	return nil, true
}

// memoryPassLinks is the PassLinks of one process: the pass ids
// exchanged, each until its pass expires, at most max of them. When full,
// the expired claims go first, then the oldest live ones (evictOldLive):
// at worst such a link can be exchanged once more.
type memoryPassLinks struct {
	max     int
	now     func() time.Time
	mu      sync.Mutex
	claimed *simplelru.LRU[string, time.Time] // queue+" "+id: until
}

func newMemoryPassLinks(max int, now func() time.Time) (*memoryPassLinks, error) {
	claimed, err := simplelru.NewLRU[string, time.Time](max, nil)
	if err != nil {
		return nil, fmt.Errorf("gate: pass links: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	return &memoryPassLinks{max: max, now: now, claimed: claimed}, nil
}

func (m *memoryPassLinks) Claim(_ context.Context, queue, id string, until time.Time) (bool, error) {
	key := queue + " " + id
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	exp, ok := m.claimed.Peek(key)
	if ok && now.Before(exp) {
		return false, nil
	}
	if !ok && m.claimed.Len() >= m.max {
		m.makeRoom(now)
	}
	m.claimed.Add(key, until)
	return true, nil
}

// makeRoom empties a full store down to nine tenths of max: first the
// claims expired at now, then the oldest live ones. Passes of different
// queues live for different times, so the oldest claim may still be live
// while newer ones have expired; letting the LRU evict it would make a
// live link exchangeable again sooner than need be. The walk over every
// claim costs O(max), and leaving a tenth free bounds it to once per
// max/10 new claims.
func (m *memoryPassLinks) makeRoom(now time.Time) {
	for _, k := range m.claimed.Keys() { // oldest first
		if exp, ok := m.claimed.Peek(k); ok && !now.Before(exp) {
			m.claimed.Remove(k)
		}
	}
	for m.claimed.Len() > m.max*9/10 {
		m.claimed.RemoveOldest()
	}
}
