package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/client"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/linedoc"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// drawEnv is an env whose queue holds a sealed draw of n participants
// (d0000, d0001, ...), placed and revealed: the enters' answers and
// the commitment they were told are returned.
func drawEnv(t *testing.T, n int) (*env, []publicapi.TicketResponse, string) {
	t.Helper()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout,
		Options{AdminToken: adminToken, InsecureUserIDs: true})
	ctx := context.Background()
	now, _ := e.rdb.Time(ctx).Result()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	if r := e.patch(fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at(-time.Minute), at(time.Hour))); r.status != 200 {
		t.Fatalf("schedule: %d %s", r.status, r.body)
	}
	var tickets []publicapi.TicketResponse
	for i := range n {
		tk := e.enter(fmt.Sprintf("d%04d", i))
		if tk.Status != queue.Waiting || tk.Position != 0 || len(tk.DrawCommitment) != 64 {
			t.Fatalf("in the pre-queue: %+v", tk)
		}
		tickets = append(tickets, tk)
	}
	commitment := tickets[0].DrawCommitment
	// The line document and a status say the same.
	if err := e.store.RefreshSnapshot(ctx, e.queue, true); err != nil {
		t.Fatal(err)
	}
	var doc linedoc.Body
	if r := e.do("GET", "/api/v1/queues/"+e.queue+"/line", ""); r.status != 200 || json.Unmarshal(r.body, &doc) != nil || doc.DrawCommitment != commitment {
		t.Fatalf("the line document: %d %s, want draw_commitment %s", r.status, r.body, commitment)
	}
	if st := e.status("d0001"); st.DrawCommitment != commitment || st.DrawKey != "" {
		t.Fatalf("a pre-queue status: %+v", st)
	}
	// Bound: the pre-queue cannot close again; the opening can move.
	wantError(t, e.patch(fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at(time.Minute), at(time.Hour))), 409, "draw_sealed")
	wantError(t, e.do("GET", "/api/v1/queues/"+e.queue+"/draw", ""), 404, "no_draw")
	if r := e.patch(fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at(-time.Minute), at(-time.Millisecond))); r.status != 200 {
		t.Fatalf("open: %d %s", r.status, r.body)
	}
	if _, err := e.store.Tick(ctx, e.queue); err != nil {
		t.Fatal(err)
	}
	return e, tickets, commitment
}

// tamperedServer serves the draw d (one page), for the verifiers to
// refuse.
func tamperedServer(t *testing.T, d client.Draw) string {
	t.Helper()
	body, _ := json.Marshal(d)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api/v1/queues/q/draw"
}

// The draw end to end: the pre-queue's answers and the line document
// carry the commitment; once drawn, the list (in pages, cacheable, ETag)
// reveals the seed that hashes to it, each drawn place is told its key
// and place, which the list has under its member id's hash, and the
// order is the keys', lowest first. The Go verifier (client.VerifyDraw,
// which `waitroom verify-draw` runs: cmd/waitroom's verifydraw_test.go)
// accepts the real draw and refuses one with two places swapped, one
// whose seed is not the commitment's, and a member missing.
func TestDrawAnyoneCanCheck(t *testing.T) {
	t.Parallel()
	const n = 57
	e, tickets, commitment := drawEnv(t, n)
	path := "/api/v1/queues/" + e.queue + "/draw"

	// Pages of 10: 6 of them, the same record on each.
	var pages []publicapi.DrawResponse
	for cursor := ""; ; {
		r := e.do("GET", path+"?limit=10&cursor="+cursor, "")
		var p publicapi.DrawResponse
		if r.status != 200 || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("page %d: %d %s", len(pages), r.status, r.body)
		}
		if cc := r.header.Get("Cache-Control"); cc != "public, max-age=60" || r.header.Get("Etag") == "" || r.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("page headers: %v", r.header)
		}
		if again := e.do("GET", path+"?limit=10&cursor="+cursor, "", "If-None-Match", r.header.Get("Etag")); again.status != 304 {
			t.Fatalf("the same page with its ETag: %d", again.status)
		}
		pages = append(pages, p)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	if len(pages) != 6 || pages[0].Count != n || !pages[0].Complete || pages[0].DrawCommitment != commitment {
		t.Fatalf("%d pages, first %+v", len(pages), pages[0])
	}
	seed, _ := hex.DecodeString(pages[0].DrawSeed)
	if sum := sha256.Sum256(seed); hex.EncodeToString(sum[:]) != commitment {
		t.Fatalf("the seed %s does not hash to %s", pages[0].DrawSeed, commitment)
	}
	byID := map[string]publicapi.DrawEntry{}
	for _, p := range pages {
		for _, en := range p.Entries {
			byID[en.IDSHA256] = en
		}
	}
	placed := 0
	for _, tk := range tickets {
		st := e.status(tk.UserID)
		if st.Status != queue.Waiting {
			continue // one of the two admitted at the opening
		}
		id := sha256.Sum256([]byte(tk.UserID))
		en, ok := byID[hex.EncodeToString(id[:])]
		if !ok || st.DrawPlace != en.Place || st.DrawKey != en.DrawKey || st.DrawCommitment != commitment {
			t.Fatalf("%s: told %+v, listed %+v", tk.UserID, st, en)
		}
		placed++
	}
	if placed != n-2 {
		t.Fatalf("%d drawn places told their draw, want %d", placed, n-2)
	}

	// The verifiers.
	real, err := client.FetchDraw(context.Background(), nil, e.srv.URL+path)
	if err != nil {
		t.Fatal(err)
	}
	member := tickets[7].UserID
	rep, err := client.VerifyDraw(real, client.DrawCheck{Commitment: commitment, Member: member})
	if err != nil || rep.Count != n || rep.MemberPlace < 1 {
		t.Fatalf("the real draw: %+v %v", rep, err)
	}
	if _, err := client.VerifyDraw(real, client.DrawCheck{Member: member, Place: rep.MemberPlace + 1}); !errors.Is(err, client.ErrDrawMismatch) {
		t.Fatalf("a member told another place: %v", err)
	}

	swapped := real
	swapped.Entries = append([]client.DrawEntry(nil), real.Entries...)
	swapped.Entries[3].IDSHA256, swapped.Entries[9].IDSHA256 = swapped.Entries[9].IDSHA256, swapped.Entries[3].IDSHA256
	swapped.Entries[3].DrawKey, swapped.Entries[9].DrawKey = swapped.Entries[9].DrawKey, swapped.Entries[3].DrawKey
	otherSeed := real
	otherSeed.DrawSeed = strings.Repeat("ab", 32)
	missing := real
	missing.Entries = nil
	for _, en := range real.Entries {
		if id := sha256.Sum256([]byte(member)); en.IDSHA256 != hex.EncodeToString(id[:]) {
			missing.Entries = append(missing.Entries, en)
		}
	}
	for name, c := range map[string]struct {
		d     client.Draw
		check client.DrawCheck
	}{
		"two places swapped":          {swapped, client.DrawCheck{}},
		"a seed not the commitment's": {otherSeed, client.DrawCheck{}},
		"another commitment":          {real, client.DrawCheck{Commitment: strings.Repeat("0", 64)}},
		"a member missing":            {missing, client.DrawCheck{Member: member}},
		"a member missing, renumbered": {func() client.Draw {
			d := missing
			d.Entries = append([]client.DrawEntry(nil), missing.Entries...)
			for i := range d.Entries {
				d.Entries[i].Place = int64(i + 1)
			}
			d.Count, d.Lines = int64(len(d.Entries)), []client.DrawLine{{Lane: "", Count: int64(len(d.Entries))}}
			return d
		}(), client.DrawCheck{Member: member}},
	} {
		if _, err := client.VerifyDraw(c.d, c.check); !errors.Is(err, client.ErrDrawMismatch) {
			t.Errorf("%s: %v, want a mismatch", name, err)
		}
		// Served, as a page, it is refused the same (FetchDraw, then VerifyDraw).
		d, err := client.FetchDraw(context.Background(), nil, tamperedServer(t, c.d))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.VerifyDraw(d, c.check); !errors.Is(err, client.ErrDrawMismatch) {
			t.Errorf("%s, served: %v, want a mismatch", name, err)
		}
	}
}

// Through the API too, a queue with no draw pays nothing for draws: an
// enter and a status are one Redis command each (the script's call), as
// before; a place in a draw's pre-queue, or one it placed, reads the
// draw's state at most once a second per replica (PageDraw) on top.
func TestNoDrawPaysNoCommandOverHTTP(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Addr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	count := &redistest.Counter{}
	rdb.AddHook(count)
	e := newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout,
		Options{AdminToken: adminToken, InsecureUserIDs: true})
	e.enter("warm-in")
	e.enter("warm-wait")
	e.status("warm-wait") // loads the scripts' libraries
	for _, c := range []struct {
		name string
		do   func()
	}{
		{"enter (in line)", func() { e.enter("u1") }},
		{"enter (again)", func() { e.enter("u1") }},
		{"status (waiting)", func() { e.status("u1") }},
		{"status (inside)", func() { e.status("warm-in") }},
	} {
		before := count.N()
		c.do()
		if n := count.N() - before; n != 1 {
			t.Errorf("%s: %d Redis commands, want 1", c.name, n)
		}
	}

	// A pre-queue's places: the draw's state read once for many answers.
	now, _ := rdb.Time(context.Background()).Result()
	at := func(d time.Duration) string { return now.Add(d).UTC().Format(time.RFC3339Nano) }
	if r := e.patch(fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at(-time.Minute), at(time.Hour))); r.status != 200 {
		t.Fatalf("schedule: %d %s", r.status, r.body)
	}
	e.enter("p0") // reads the seal (draw.lua) and the draw's state
	before := count.N()
	for i := range 10 {
		if tk := e.enter(fmt.Sprintf("p%d", i+1)); tk.DrawCommitment == "" {
			t.Fatalf("a pre-queue enter: %+v", tk)
		}
		e.status(fmt.Sprintf("p%d", i+1))
	}
	if n := count.N() - before; n > 20+2 {
		t.Errorf("10 enters and 10 statuses in the pre-queue: %d Redis commands, want at most 22", n)
	}
}
