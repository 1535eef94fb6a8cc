package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/gate/proxy"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck"
	"github.com/waitroom/waitroom/internal/hygiene/reqcheck/pathtest"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/passledger"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// roomsEnv is a waitroom in gate mode with several rooms
// (pathtest.TestRooms: its queues concert, sale and shop) in front of a
// recorder.
type roomsEnv struct {
	*env
	rec                 *pathtest.Recorder
	concert, sale, shop string
	rooms               []pathtest.Room
}

type roomsOptions struct {
	catchAll    bool            // WAITROOM_GATE_QUEUE=shop: the room of the paths no route covers
	clientIP    []string        // WAITROOM_TRUSTED_PROXIES
	bypassCIDRs clientip.Ranges // WAITROOM_GATE_BYPASS_CIDRS
}

func newRoomsEnv(t *testing.T, o roomsOptions) *roomsEnv {
	t.Helper()
	rdb := redistest.Client(t)
	places, passes := newTrust(t, rdb)
	base := fmt.Sprintf("r%d", time.Now().UnixNano())
	e := &roomsEnv{rec: &pathtest.Recorder{}, concert: base + "-concert", sale: base + "-sale", shop: base + "-shop"}
	e.rooms = pathtest.TestRooms(e.concert, e.sale, e.shop)
	routes, err := gate.ParseRoutes(pathtest.RoutesOf(e.rooms))
	if err != nil {
		t.Fatal(err)
	}
	// Refill 1 per hour: each queue's first enter is admitted.
	store, err := queue.NewStore(rdb, []string{e.concert, e.sale, e.shop}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	uses, err := passledger.New(rdb, passledger.DefaultMaxClients, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	gopts := proxy.GateOptions{Routes: routes, Passes: passes, Admissions: store, Bypass: []string{pathtest.Bypass},
		BypassCIDRs: o.bypassCIDRs, InsecureCookie: true, Uses: uses,
		Revoke: func(ctx context.Context, q, m string) error {
			_, err := queue.NewInspector(store).Remove(ctx, q, m)
			return err
		}}
	if o.catchAll {
		gopts.Queue = e.shop
		e.rooms = append(e.rooms, pathtest.Room{Prefix: "/", Queue: e.shop})
	}
	g, err := proxy.NewGate(context.Background(), gopts)
	if err != nil {
		t.Fatal(err)
	}
	resolver, err := clientip.New(o.clientIP)
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(e.rec)
	t.Cleanup(up.Close)
	u, _ := url.Parse(up.URL)
	e.env = newEnvWithStore(t, rdb, store, e.concert, Options{Places: places, Passes: passes, Gate: g, AdminToken: adminToken, ClientIP: resolver,
		Upstream: upstreamProxy(u, 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), nil)})
	return e
}

// admitted enters queue q once (its bucket's token) and returns the ticket.
func (e *roomsEnv) admitted(q string) publicapi.TicketResponse {
	e.t.Helper()
	tk := decodeTicket(e.t, e.do("POST", "/api/v1/queues/"+q+"/enter", "{}"))
	if tk.Status != queue.Entered || tk.Pass == "" {
		e.t.Fatalf("not admitted to %s: %+v", q, tk)
	}
	return tk
}

// Generated hosts, paths and passes through the reverse-proxy gate:
// nothing reaches the upstream in a room (in any server's reading of what
// it got) without a pass for that room, and what does reach it is the
// clean path the gate decided on.
func TestGateRoutesProperty(t *testing.T) {
	t.Parallel()
	for _, catchAll := range []bool{false, true} {
		t.Run(fmt.Sprint("catch-all=", catchAll), func(t *testing.T) {
			t.Parallel()
			e := newRoomsEnv(t, roomsOptions{catchAll: catchAll})
			passes := map[string]string{}
			for _, q := range []string{e.concert, e.sale, e.shop} {
				passes[q] = e.admitted(q).Pass
			}
			rng := rand.New(rand.NewPCG(55, 89))
			const n = 3000
			pathtest.SendToRooms(t, rng, strings.TrimPrefix(e.srv.URL, "http://"), passes, func(q string) string { return gate.CookieName(q, false) }, n)
			passless := e.rec.CheckRooms(t, e.rooms)
			seen := e.rec.Seen()
			byQueue := map[string]int{}
			for _, s := range seen {
				byQueue[s.Queue]++
				if p, _, _ := strings.Cut(s.Target, "?"); s.Sub != "" && !reqcheck.IsCanonical(p) {
					t.Errorf("the upstream got %q, not the clean path the gate checked", s.Target)
				}
			}
			t.Logf("%d requests, %d reached the upstream, %d without a pass; by pass queue: %v", n, len(seen), passless, byQueue)
			if passless == 0 || byQueue[e.concert] == 0 || byQueue[e.sale] == 0 || byQueue[e.shop] == 0 {
				t.Fatalf("the run proves nothing: %v", byQueue)
			}
		})
	}
}

// Two rooms end to end through the reverse-proxy gate: each refuses to its
// own waiting page, a pass is handed over only in its own room, opens only
// its own room, and the ticket and the back office name the rooms' paths.
func TestGateRoutesFlow(t *testing.T) {
	t.Parallel()
	e := newRoomsEnv(t, roomsOptions{})
	cookie := func(q, pass string) []string { return []string{"Cookie", gate.CookieName(q, false) + "=" + pass} }

	r := e.do("GET", "/sale/concert-a/seat?x=1", "", "Accept", "text/html")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/q/"+e.concert+"?return=%2Fsale%2Fconcert-a%2Fseat%3Fx%3D1" {
		t.Fatalf("no pass in the concert's room: %d %q", r.status, r.header.Get("Location"))
	}
	if r := e.do("GET", "/sale/other", "", "Accept", "text/html"); r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/q/"+e.sale+"?") {
		t.Fatalf("no pass in the sale's room: %d %q", r.status, r.header.Get("Location"))
	}
	if r := e.do("GET", "/about", ""); r.status != 200 {
		t.Fatalf("a path in no room: %d", r.status)
	}

	concert, sale := e.admitted(e.concert), e.admitted(e.sale)
	if concert.NextPath != "/sale/concert-a/" || sale.NextPath != "/sale/" {
		t.Errorf("next_path %q and %q, want each room's own", concert.NextPath, sale.NextPath)
	}
	// The concert's pass handed over in the sale's room: refused, no cookie.
	r = e.do("GET", "/sale/other?wr_pass="+url.QueryEscape(concert.Pass), "")
	if r.status != http.StatusSeeOther || !strings.HasPrefix(r.header.Get("Location"), "/q/"+e.sale+"?") || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("hand-over in another room: %d %v", r.status, r.header)
	}
	r = e.do("GET", "/sale/concert-a/?wr_pass="+url.QueryEscape(concert.Pass), "")
	if r.status != http.StatusSeeOther || r.header.Get("Location") != "/sale/concert-a/" || !strings.HasPrefix(r.header.Get("Set-Cookie"), gate.CookieName(e.concert, false)+"=") {
		t.Fatalf("hand-over in its room: %d %v", r.status, r.header)
	}
	if r := e.do("GET", "/sale/concert-a/seat", "", cookie(e.concert, concert.Pass)...); r.status != 200 {
		t.Fatalf("the concert's pass in its room: %d", r.status)
	}
	if s := e.rec.Seen(); s[len(s)-1].Queue != e.concert {
		t.Errorf("the upstream saw X-Waitroom-Queue %q", s[len(s)-1].Queue)
	}
	before := len(e.rec.Seen())
	for _, hdr := range [][]string{cookie(e.concert, concert.Pass), cookie(e.sale, concert.Pass), bearerHeader(concert.Pass)} {
		if r := e.do("GET", "/sale/other", "", hdr...); r.status == 200 {
			t.Errorf("the concert's pass (%s) opened the sale's room", hdr[0])
		}
	}
	for _, hdr := range [][]string{cookie(e.sale, sale.Pass), cookie(e.concert, sale.Pass), bearerHeader(sale.Pass)} {
		if r := e.do("GET", "/sale/concert-a/seat", "", hdr...); r.status == 200 {
			t.Errorf("the sale's pass (%s) opened the concert's room", hdr[0])
		}
	}
	if n := len(e.rec.Seen()); n != before {
		t.Fatalf("%d requests with another room's pass reached the upstream", n-before)
	}
	if r := e.do("GET", "/sale/other", "", cookie(e.sale, sale.Pass)...); r.status != 200 {
		t.Fatalf("the sale's pass in its room: %d", r.status)
	}

	// The back office lists each queue's routes.
	var list struct {
		Queues []adminQueueJSON `json:"queues"`
	}
	r = e.do("GET", "/admin/v1/queues", "", "Authorization", "Bearer "+adminToken)
	if err := json.Unmarshal(r.body, &list); err != nil || r.status != 200 {
		t.Fatalf("admin queues: %d %s", r.status, r.body)
	}
	want := map[string][]string{e.concert: {"/sale/concert-a/"}, e.sale: {"/sale/"}, e.shop: {"shop.example/"}}
	for _, q := range list.Queues {
		if !slices.Equal(q.Routes, want[q.Queue]) {
			t.Errorf("%s: routes %q, want %q", q.Queue, q.Routes, want[q.Queue])
		}
	}
	if len(list.Queues) != 3 {
		t.Errorf("%d queues", len(list.Queues))
	}
}

// WAITROOM_GATE_BYPASS_CIDRS: a client in the ranges passes without a
// pass, judged on the address the trusted-proxy rules give: an untrusted
// peer's X-Forwarded-For is not believed, a trusted proxy's is; IPv4, IPv6
// and IPv4-mapped addresses; through the reverse-proxy gate and
// /gate/verify alike.
func TestGateBypassCIDRs(t *testing.T) {
	t.Parallel()
	ranges, err := clientip.ParseRanges([]string{"192.0.2.0/24", "2001:db8:1::/48", "203.0.113.9"})
	if err != nil {
		t.Fatal(err)
	}
	e := newRoomsEnv(t, roomsOptions{catchAll: true, clientIP: []string{"10.0.0.1", "fd00::1"}, bypassCIDRs: ranges})
	for _, c := range []struct {
		peer, xff string
		bypass    bool
	}{
		{"192.0.2.7:4000", "", true},
		{"203.0.113.9:4000", "", true},
		{"203.0.113.10:4000", "", false},
		{"198.51.100.7:4000", "", false},
		{"198.51.100.7:4000", "192.0.2.7", false},           // spoofed by an untrusted peer
		{"192.0.2.7:4000", "198.51.100.7", true},            // an untrusted peer's header is not read at all
		{"10.0.0.1:4000", "192.0.2.7", true},                // the trusted proxy names the client
		{"10.0.0.1:4000", "192.0.2.7, 198.51.100.7", false}, // ... the last untrusted hop is the client
		{"10.0.0.1:4000", "198.51.100.7, 192.0.2.7", true},  // whatever the client wrote before it
		{"10.0.0.2:4000", "192.0.2.7", false},               // not a trusted proxy
		{"10.0.0.1:4000", "", false},                        // the proxy itself
		{"[2001:db8:1:ffff::5]:4000", "", true},
		{"[2001:db8:2::5]:4000", "", false},
		{"[fd00::1]:4000", "2001:db8:1::abcd", true},
		{"[fd00::2]:4000", "2001:db8:1::abcd", false},
		{"[::ffff:192.0.2.7]:4000", "", true},
		{"[2001:db8:2::5]:4000", "[2001:db8:1::1]", false},
	} {
		name := c.peer + " xff=" + c.xff
		for _, target := range []string{"/sale/concert-a/x", "/about"} {
			req := httptest.NewRequest("GET", target, nil)
			req.RemoteAddr = c.peer
			req.Header.Set("Accept", "text/html")
			if c.xff != "" {
				req.Header.Set("X-Forwarded-For", c.xff)
			}
			rr := httptest.NewRecorder()
			e.h.ServeHTTP(rr, req)
			if got := rr.Code == 200; got != c.bypass {
				t.Errorf("%s %s: %d, want bypass=%v", name, target, rr.Code, c.bypass)
			}

			req = httptest.NewRequest("GET", "/gate/verify", nil)
			req.RemoteAddr = c.peer
			req.Header.Set(gate.HeaderOriginalURI, target)
			if c.xff != "" {
				req.Header.Set("X-Forwarded-For", c.xff)
			}
			rr = httptest.NewRecorder()
			e.h.ServeHTTP(rr, req)
			if got := rr.Code == http.StatusNoContent; got != c.bypass {
				t.Errorf("verify %s %s: %d, want bypass=%v", name, target, rr.Code, c.bypass)
			}
		}
	}
}
