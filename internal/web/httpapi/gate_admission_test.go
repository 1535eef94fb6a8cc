package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// One admission, one holder. Every status call of an ENTERED
// place signs a new pass (a new jti); the sharing limit counts the
// networks of the admission, not of each pass.

// twoGateReplicas is two waitroom replicas in gate mode over one Redis and
// one store, in front of one upstream; a's queue admits its first enter.
func twoGateReplicas(t *testing.T) (a, b *env) {
	t.Helper()
	up := newUpstream(t)
	u, _ := url.Parse(up.srv.URL)
	a = newGateEnv(t, u, 5*time.Second)
	s := a
	b = newEnvWithStore(t, a.rdb, a.store, a.queue, Options{
		Places: s.places, Passes: s.passes, ClientIP: behindProxy(t),
		Gate:     newTestGate(t, a.rdb, a.store, a.queue, s.passes, nil, true),
		Upstream: upstreamProxy(u, 5*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)), nil),
	})
	return a, b
}

// passesOf asks for the status of the admitted place n-1 times (from
// addresses of its own, so no status limit is reached) and returns the n
// distinct passes it was given, the enter's first.
func passesOf(t *testing.T, e *env, tk publicapi.TicketResponse, n int) []string {
	t.Helper()
	passes := []string{tk.Pass}
	seen := map[string]bool{tk.Pass: true}
	clients := clientaddr.New(t)
	for i := 1; i < n; i++ {
		st := decodeTicket(t, e.statusOf(append(bearerHeader(tk.PlaceToken), "X-Forwarded-For", clients.Next())...))
		if st.Pass == "" || seen[st.Pass] || st.UserID != tk.UserID {
			t.Fatalf("status call %d: %+v, want a new pass of the same admission", i, st)
		}
		seen[st.Pass] = true
		passes = append(passes, st.Pass)
	}
	return passes
}

// Ten passes of one admission, used from thirty networks through two
// replicas on one Redis: at most WAITROOM_PASS_MAX_CLIENTS (3) networks
// are ever let through, and every other request is refused as a shared
// pass (401 pass_used_elsewhere). Before, each pass had three networks of
// its own: all thirty got 200.
func TestGatePassesOfOneAdmissionShareItsLimit(t *testing.T) {
	t.Parallel()
	a, b := twoGateReplicas(t)
	tk := a.admittedPass()
	passes := passesOf(t, a, tk, 10)
	admitted := map[string]bool{}
	for i := range 30 {
		net := fmt.Sprintf("198.18.%d.%d", i/10, 10+i%10)
		e := []*env{a, b}[i%2]
		r := e.do("GET", "/order", "", append(passCookie(e, passes[i%len(passes)]), "X-Forwarded-For", net, "Accept", "application/json")...)
		switch {
		case r.status == http.StatusOK:
			admitted[net] = true
		case r.status != http.StatusUnauthorized || errorCode(r.body) != "pass_used_elsewhere":
			t.Fatalf("network %d (%s, pass %d): %d %s, want 200 or 401 pass_used_elsewhere", i, net, i%len(passes), r.status, r.body)
		}
	}
	if len(admitted) > 3 {
		t.Fatalf("%d networks let in with the passes of one admission, want at most 3: %v", len(admitted), admitted)
	}
	// Every pass of the admission is cancelled, on both replicas, for
	// the networks it was let in from too.
	for i, p := range passes {
		e := []*env{a, b}[i%2]
		wait.For(t, 5*time.Second, "the pass to be refused as used elsewhere", func() (bool, string) {
			r := e.do("GET", "/order", "", append(passCookie(e, p), "X-Forwarded-For", testClient(t), "Accept", "application/json")...)
			return r.status == http.StatusUnauthorized && errorCode(r.body) == "pass_used_elsewhere", ""
		})
	}
}

// The holder's own browser re-opens the site with each new pass its
// waiting page hands over (one jti, one exchange), on either replica; a
// hand-over from a new network counts that network for the admission,
// so new passes handed over elsewhere open the site for two more
// networks and are refused from the fourth.
func TestGatePassLinkOfNewPassesCountsNetworks(t *testing.T) {
	t.Parallel()
	a, b := twoGateReplicas(t)
	tk := a.admittedPass()
	passes := passesOf(t, a, tk, 6)
	handOver := func(e *env, p, net string) response {
		return e.do("GET", "/order?wr_pass="+url.QueryEscape(p), "", "X-Forwarded-For", net, "Accept", "text/html")
	}
	exchanged := func(e *env, r response, p string) bool {
		return r.status == http.StatusSeeOther && strings.Contains(r.header.Get("Set-Cookie"), e.passCookieName()+"="+p)
	}
	home := "198.18.9.1"
	for i, p := range passes[:2] { // the holder reloads the waiting page: a new pass each time
		if e := []*env{a, b}[i]; !exchanged(e, handOver(e, p, home), p) {
			t.Fatalf("the holder's hand-over of pass %d was not exchanged", i)
		}
	}
	if r := handOver(b, passes[1], "198.18.9.2"); exchanged(b, r, passes[1]) {
		t.Fatal("a hand-over link was exchanged twice")
	}
	// 198.18.9.2 is the second network (the refused exchange above was
	// a use from it); a third is still fine, a fourth is not.
	if e := a; !exchanged(e, handOver(e, passes[2], "198.18.9.3"), passes[2]) {
		t.Fatal("a hand-over from the third network was refused")
	}
	r := handOver(b, passes[3], "198.18.9.4")
	if r.status != http.StatusSeeOther || !strings.Contains(r.header.Get("Location"), "reason=used_elsewhere") {
		t.Fatalf("a hand-over from a fourth network: %d %q, want the waiting page with reason=used_elsewhere", r.status, r.header.Get("Location"))
	}
}

// errorCode is the stable code of a JSON error body ("" if none).
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return e.Error.Code
}
