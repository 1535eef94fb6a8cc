package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/linedoc"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// TestLineDocument: the line's public document is the same bytes and
// headers for everyone (cookies, credentials, origins), cacheable for a
// second, with an ETag and 304, no cookie set, nothing varying on who
// asks, no person in it, and no Redis command per request.
func TestLineDocument(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	count := &redistest.Counter{}
	rdb.AddHook(count)
	e := newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}, testTimeout,
		Options{InsecureUserIDs: true})
	path := "/api/v1/queues/" + e.queue + "/line"

	// No snapshot yet: 503, never cached.
	r := e.do("GET", path, "")
	wantError(t, r, 503, "unavailable")
	if cc := r.header.Get("Cache-Control"); strings.Contains(cc, "public") {
		t.Fatalf("a 503 is cacheable: %q", cc)
	}

	members := map[string]bool{}
	for i := range 300 {
		tk := e.enter(fmt.Sprintf("line-user-%03d", i))
		members[tk.UserID] = true
	}
	if err := e.store.RefreshSnapshot(context.Background(), e.queue, true); err != nil {
		t.Fatal(err)
	}

	before := count.N()
	var first response
	for i, h := range [][]string{
		nil,
		{"Cookie", "__Host-wr_place_" + e.queue + "=v2.x.y.z; other=1"},
		{"Authorization", "Bearer v2.some.place.token"},
		{"Origin", "https://elsewhere.example", "Sec-Fetch-Site", "cross-site"},
		{"Accept-Language", "ko", "X-Forwarded-For", "203.0.113.9"},
	} {
		r := e.do("GET", path, "", h...)
		if r.status != 200 {
			t.Fatalf("%v: %d %s", h, r.status, r.body)
		}
		if i == 0 {
			first = r
		}
		if !bytes.Equal(r.body, first.body) {
			t.Fatalf("%v: other bytes:\n%s\n%s", h, r.body, first.body)
		}
		for _, k := range []string{"Cache-Control", "Etag", "Content-Type", "Access-Control-Allow-Origin"} {
			if r.header.Get(k) != first.header.Get(k) {
				t.Fatalf("%v: %s %q, first %q", h, k, r.header.Get(k), first.header.Get(k))
			}
		}
		if r.header.Get("Set-Cookie") != "" || r.header.Get("Vary") != "" {
			t.Fatalf("%v: Set-Cookie %q, Vary %q", h, r.header.Get("Set-Cookie"), r.header.Get("Vary"))
		}
	}
	if got := first.header.Get("Cache-Control"); got != "public, max-age=1" {
		t.Fatalf("Cache-Control %q", got)
	}
	tag := first.header.Get("ETag")
	if r := e.do("GET", path, "", "If-None-Match", tag); r.status != 304 || len(r.body) != 0 {
		t.Fatalf("If-None-Match: %d %q", r.status, r.body)
	}
	if n := count.N() - before; n != 0 {
		t.Fatalf("%d Redis commands for 6 document requests", n)
	}
	if len(first.body) > linedoc.MaxBytes {
		t.Fatalf("%d bytes", len(first.body))
	}
	for m := range members {
		if strings.Contains(string(first.body), m) {
			t.Fatalf("the document names %s", m)
		}
	}
	var doc linedoc.Body
	if err := json.Unmarshal(first.body, &doc); err != nil || doc.Waiting != 299 || len(doc.Samples) < 2 || !doc.Complete {
		t.Fatalf("%s (%v)", first.body, err)
	}
	wantError(t, e.do("GET", "/api/v1/queues/nope/line", ""), 404, "queue_not_found")
}

// TestEnterAndStatusCarryTheArrival: a waiting place's answers carry its
// arrival number, the one its credential is signed with.
func TestEnterAndStatusCarryTheArrival(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}, testTimeout, Options{})
	enter := func() publicapi.TicketResponse {
		return decodeTicket(t, e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}", "Content-Type", "application/json"))
	}
	enter() // takes the bucket's token
	tk := enter()
	if tk.Status != queue.Waiting || tk.Arrival <= 0 || tk.PlaceToken == "" {
		t.Fatalf("enter: %+v", tk)
	}
	// Near the head: status.lua answers; the credential's number is told.
	st := decodeTicket(t, e.do("GET", "/api/v1/queues/"+e.queue+"/status", "", bearerHeader(tk.PlaceToken)...))
	if st.Status != queue.Waiting || st.Arrival != tk.Arrival {
		t.Fatalf("status %+v, enter arrival %d", st, tk.Arrival)
	}
}

// TestOlderCredentialIsToldTheCurrentPlace: a member that entered again
// (a double click) holds two credentials, T1 for its first arrival number
// and T2 for its new one. A status with T1 answers the place the member
// holds now: its current arrival number, with a fresh credential for it
// (place_token and the cookie), so a page holding the older answer moves
// to the current place. A status with a current credential carries none.
func TestOlderCredentialIsToldTheCurrentPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Minute}, testTimeout, Options{})
	enterPath, statusPath := "/api/v1/queues/"+e.queue+"/enter", "/api/v1/queues/"+e.queue+"/status"
	enter := func(h ...string) publicapi.TicketResponse {
		return decodeTicket(t, e.do("POST", enterPath, "{}", append([]string{"Content-Type", "application/json"}, h...)...))
	}
	enter() // takes the bucket's token
	for range 4 {
		enter() // others ahead
	}
	t1 := enter()
	for range 3 {
		enter() // others behind
	}
	t2 := enter(bearerHeader(t1.PlaceToken)...)
	if t2.UserID != t1.UserID || t2.Arrival <= t1.Arrival || t2.PlaceToken == "" {
		t.Fatalf("entering again: %+v, first %+v", t2, t1)
	}
	r := e.do("GET", statusPath, "", bearerHeader(t1.PlaceToken)...)
	old := decodeTicket(t, r)
	if old.Status != queue.Waiting || old.Arrival != t2.Arrival || old.Position != t2.Position {
		t.Fatalf("status with the older credential: %+v, want arrival %d at position %d", old, t2.Arrival, t2.Position)
	}
	if old.PlaceToken == "" || old.PlaceToken == t1.PlaceToken || !strings.Contains(r.header.Get("Set-Cookie"), "wr_place_"+e.queue+"=") {
		t.Fatalf("no fresh credential for the current place: %+v, Set-Cookie %q", old, r.header.Get("Set-Cookie"))
	}
	for name, token := range map[string]string{"the fresh credential": old.PlaceToken, "T2": t2.PlaceToken} {
		r := e.do("GET", statusPath, "", bearerHeader(token)...)
		st := decodeTicket(t, r)
		if st.Arrival != t2.Arrival || st.Position != t2.Position || st.PlaceToken != "" || r.header.Get("Set-Cookie") != "" {
			t.Fatalf("status with %s: %+v, Set-Cookie %q; want arrival %d and no new credential", name, st, r.header.Get("Set-Cookie"), t2.Arrival)
		}
	}
}
