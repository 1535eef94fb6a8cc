package publicapi

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// A queue's last draw as a public, cacheable list (docs/DRAW.md): its
// seed, revealed at the opening, the commitment published before it, and
// for every place, in place order, the SHA-256 of the member id holding
// it and its draw key. It names nobody; with it anyone recomputes the
// order (the verifier page, waitroom verify-draw), and each participant,
// who knows its own member id, finds its own place.

// Bounds of a page of the draw's list.
const (
	DrawPageDefault = 1000
	DrawPageMax     = 5000
)

var (
	drawPlacingCache  = []string{"public, max-age=1"}
	drawCompleteCache = []string{"public, max-age=60"}
)

// DrawResponse is GET /api/v1/queues/{queue}/draw's answer: the draw's
// record and one page of its list.
type DrawResponse struct {
	Queue string `json:"queue"`
	// DrawFor is the opening the draw was made for.
	DrawFor string `json:"draw_for"`
	// DrawCommitment is the SHA-256 (hex) published while the draw was
	// sealed; DrawSeed the seed (hex) revealed at the opening, whose
	// SHA-256 it must be. Both "" for a draw whose participants joined
	// before draws were sealed: it cannot be checked.
	DrawCommitment string `json:"draw_commitment"`
	DrawSeed       string `json:"draw_seed"`
	// Count is the places of the whole draw, every line's; Complete is
	// false while it is being placed (the list grows: come back).
	Count    int64 `json:"count"`
	Complete bool  `json:"complete"`
	// Lines are the draw's lines in the list's order: the general lane's
	// first (lane ""), then each lane that had participants.
	Lines []DrawLine `json:"lines"`
	// Entries are this page's places, in the list's order.
	Entries []DrawEntry `json:"entries"`
	// NextCursor asks for the next page; absent at the end.
	NextCursor string `json:"next_cursor,omitempty"`
}

// DrawLine is one line of a draw and its places (1..count).
type DrawLine struct {
	Lane  string `json:"lane"`
	Count int64  `json:"count"`
}

// DrawEntry is one place of a draw: its line, its place in it, the
// SHA-256 of the member id holding it and its draw key,
// HMAC-SHA256(seed, member id), both hex.
type DrawEntry struct {
	Lane     string `json:"lane,omitempty"`
	Place    int64  `json:"place"`
	IDSHA256 string `json:"id_sha256"`
	DrawKey  string `json:"draw_key"`
}

// drawCursor is a place in a draw's list: its line's index and place.
type drawCursor struct {
	line  int
	place int64
}

func (c drawCursor) String() string {
	return strconv.Itoa(c.line) + "." + strconv.FormatInt(c.place, 10)
}

// parseDrawCursor reads a cursor ("" the first place).
func parseDrawCursor(s string) (drawCursor, bool) {
	if s == "" {
		return drawCursor{0, 1}, true
	}
	l, p, ok := strings.Cut(s, ".")
	line, err1 := strconv.Atoi(l)
	place, err2 := strconv.ParseInt(p, 10, 64)
	return drawCursor{line, place}, ok && err1 == nil && err2 == nil && line >= 0 && place >= 1
}

// Draw answers GET /api/v1/queues/{queue}/draw?cursor=&limit=: 200 with
// the last draw and a page of its list (at most limit places, 1000 by
// default, 5000 at most), 304 for its ETag, 404 no_draw before any draw.
// The same for everyone: cacheable for a second while the draw is being
// placed, a minute once whole.
func (s *API) Draw(w http.ResponseWriter, r *http.Request) {
	q, ok := s.kit.KnownQueue(w, r, s.store)
	if !ok {
		return
	}
	cur, ok := parseDrawCursor(r.URL.Query().Get("cursor"))
	if !ok {
		s.fail(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_cursor", Field: "cursor", Message: "cursor must be a next_cursor this route gave"})
		return
	}
	limit := int64(DrawPageDefault)
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 || n > DrawPageMax {
			s.fail(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_limit", Field: "limit",
				Message: fmt.Sprintf("limit must be an integer from 1 to %d", DrawPageMax)})
			return
		}
		limit = n
	}
	d, err := s.store.PageDraw(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	last := d.Last
	if last.For.IsZero() {
		s.fail(w, r, httpkit.ErrNoDraw)
		return
	}
	if cur.line >= len(last.Lines) {
		s.fail(w, r, &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_cursor", Field: "cursor", Message: "cursor must be a next_cursor this route gave"})
		return
	}
	// The page's places, and where the next begins. The entries of a
	// place once placed never change, so the ETag needs no read of them.
	line := last.Lines[cur.line]
	n := max(0, min(limit, line.Count-cur.place+1))
	next := drawCursor{cur.line, cur.place + n}
	if next.place > line.Count {
		next = drawCursor{cur.line + 1, 1}
	}
	for next.line < len(last.Lines) && last.Lines[next.line].Count == 0 {
		next.line++
	}
	// While the draw is being placed its lines grow: a page says so
	// (complete false), and a verifier waits until it is whole.
	more := next.line < len(last.Lines)
	etag := fmt.Sprintf(`"%.16s-%d-%t-%s-%d"`, last.Commitment, last.Count, last.Placing, cur, n)

	h := w.Header()
	h.Del("Vary")
	h["Access-Control-Allow-Origin"] = anyOriginHeader
	h["Cache-Control"] = drawCompleteCache
	if last.Placing {
		h["Cache-Control"] = drawPlacingCache
	}
	h["Etag"] = []string{etag}
	if httpkit.ETagMatches(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	resp := DrawResponse{Queue: q, DrawFor: httpkit.RFC3339(last.For), DrawCommitment: last.Commitment, DrawSeed: last.Seed,
		Count: last.Count, Complete: !last.Placing, Entries: []DrawEntry{}}
	for _, l := range last.Lines {
		resp.Lines = append(resp.Lines, DrawLine{Lane: l.Lane, Count: l.Count})
	}
	if n > 0 {
		if resp.Entries, err = s.drawEntries(r.Context(), q, line.Lane, cur.place, n); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if more {
		resp.NextCursor = next.String()
	}
	body, _ := json.Marshal(resp) // plain values: cannot fail
	h["Content-Type"] = httpkit.JSONHeader
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// drawEntries reads n places of lane's line from place from.
func (s *API) drawEntries(ctx context.Context, q, lane string, from, n int64) ([]DrawEntry, error) {
	raw, err := s.store.DrawEntries(ctx, q, lane, from, n)
	if err != nil {
		return nil, err
	}
	out := make([]DrawEntry, len(raw))
	for i, e := range raw {
		out[i] = DrawEntry{Lane: lane, Place: from + int64(i), IDSHA256: hex.EncodeToString(e.IDHash), DrawKey: hex.EncodeToString(e.Key)}
	}
	return out, nil
}

// drawSeedOf is d's revealed seed as bytes (nil: none).
func drawSeedOf(d queue.DrawRecord) []byte {
	b, err := hex.DecodeString(d.Seed)
	if err != nil || len(b) == 0 {
		return nil
	}
	return b
}
