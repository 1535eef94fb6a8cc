package httpapi

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/crossorigin"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

func (e *env) waiting() int64 {
	e.t.Helper()
	i, err := e.store.Info(context.Background(), e.queue)
	if err != nil {
		e.t.Fatal(err)
	}
	return i.Waiting + i.Entered
}

// Another site's page cannot make its visitors' browsers enter or leave
// (the cross-site text/plain POST); apps without a browser, the
// waiting page itself and allowed origins can.
func TestCrossSiteRequestsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{})
	enter := "/api/v1/queues/" + e.queue + "/enter"
	for name, h := range map[string][]string{
		"a modern browser on another site": {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		"a sibling site":                   {"Sec-Fetch-Site", "same-site", "Origin", "https://evil.localhost"},
		"an older browser on another site": {"Origin", "https://evil.example"},
		"a sandboxed page":                 {"Origin", "null"},
	} {
		r := e.do("POST", enter, "{}", h...)
		wantError(t, r, 403, "cross_site_request")
		if c := r.header.Values("Set-Cookie"); len(c) != 0 {
			t.Errorf("%s: refused but set %v", name, c)
		}
	}
	// The content type a form or a no-cors fetch can send.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", ""} {
		wantError(t, e.do("POST", enter, "{}", "Content-Type", ct), 415, "unsupported_media_type")
	}
	if n := e.waiting(); n != 0 {
		t.Fatalf("refused requests made %d places", n)
	}
	// The page itself, an app, and a browser that says where it is.
	tk, _ := e.enterAnon("Sec-Fetch-Site", "same-origin", "Origin", e.srv.URL)
	if tk.Status == "" {
		t.Fatal("same-origin enter refused")
	}
	app, _ := e.enterAnon()
	if app.PlaceToken == "" {
		t.Fatal("an app's enter refused")
	}
	if e.waiting() != 2 {
		t.Fatalf("%d places, want 2", e.waiting())
	}
	// Leave from another site is refused too, and the place stays.
	r := e.do("DELETE", "/api/v1/queues/"+e.queue+"/place", "", append(bearerHeader(app.PlaceToken), "Sec-Fetch-Site", "cross-site")...)
	wantError(t, r, 403, "cross_site_request")
	if e.waiting() != 2 {
		t.Fatal("a cross-site leave took a place")
	}
}

// WAITROOM_CORS_ORIGINS opens the API to the listed origins only.
func TestCORSOrigins(t *testing.T) {
	t.Parallel()
	policy, err := crossorigin.New([]string{"https://shop.example"})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{Origins: policy})
	enter := "/api/v1/queues/" + e.queue + "/enter"
	pre := e.do("OPTIONS", enter, "", "Origin", "https://shop.example", "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type")
	if pre.status != 204 || pre.header.Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Fatalf("preflight: %d %v", pre.status, pre.header)
	}
	r := e.do("POST", enter, "{}", "Origin", "https://shop.example", "Sec-Fetch-Site", "cross-site")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Fatalf("enter from an allowed origin: %d %s", r.status, r.body)
	}
	other := e.do("OPTIONS", enter, "", "Origin", "https://evil.example", "Access-Control-Request-Method", "POST")
	if other.header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("another origin's preflight: %v", other.header)
	}
	wantError(t, e.do("POST", enter, "{}", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"), 403, "cross_site_request")
}

// Rate limits answer 429 with Retry-After and retry_at; behind trusted
// proxies each forwarded client has its own budget, and a client that is
// not a trusted proxy cannot pick its budget by sending X-Forwarded-For.
func TestRateLimitsOverHTTP(t *testing.T) {
	t.Parallel()
	limited := queue.Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour,
		Limits: queue.Limits{EnterPerClient: queue.Limit{Rate: 0.01, Burst: 2}, StatusPerPlace: queue.Limit{Rate: 0.01, Burst: 1}}}
	rdb := redistest.Client(t)

	direct := newEnv(t, rdb, limited, testTimeout, Options{})
	for i := range 2 {
		if _, r := direct.enterAnon("X-Forwarded-For", "203.0.113."+strconv.Itoa(i)); r.status != 200 {
			t.Fatalf("enter %d: %d %s", i, r.status, r.body)
		}
	}
	r := direct.do("POST", "/api/v1/queues/"+direct.queue+"/enter", "{}", "X-Forwarded-For", "203.0.113.99")
	wantError(t, r, 429, "rate_limited")
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	var body httpkit.ErrorBody
	_ = json.Unmarshal(r.body, &body)
	at, perr := time.Parse(time.RFC3339, body.Error.RetryAt)
	if err != nil || secs < 1 || secs > 101 || perr != nil || at.Before(time.Now()) {
		t.Fatalf("Retry-After %q, retry_at %q", r.header.Get("Retry-After"), body.Error.RetryAt)
	}

	trusted, _ := clientip.New([]string{"127.0.0.1/32", "::1/128"})
	behind := newEnv(t, rdb, limited, testTimeout, Options{ClientIP: trusted})
	for _, ip := range []string{"198.51.100.1", "198.51.100.1", "198.51.100.2"} {
		if _, r := behind.enterAnon("X-Forwarded-For", ip); r.status != 200 {
			t.Fatalf("%s through a trusted proxy: %d %s", ip, r.status, r.body)
		}
	}
	wantError(t, behind.do("POST", "/api/v1/queues/"+behind.queue+"/enter", "{}", "X-Forwarded-For", "198.51.100.1"), 429, "rate_limited")
	// Status per place: a second poll within the burst is refused.
	me, _ := behind.enterAnon("X-Forwarded-For", "198.51.100.3")
	if r := behind.statusOf(bearerHeader(me.PlaceToken)...); r.status != 200 {
		t.Fatalf("first status: %d %s", r.status, r.body)
	}
	wantError(t, behind.statusOf(bearerHeader(me.PlaceToken)...), 429, "rate_limited")
}

// Challenges are limited per client address at the enter limit: after
// its burst one address is answered as an enter over the limit is (429
// rate_limited, Retry-After, retry_at), another address is still served,
// and the first one's enters are not spent.
func TestChallengeRateLimitOverHTTP(t *testing.T) {
	t.Parallel()
	limited := queue.Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour,
		Limits: queue.Limits{EnterPerClient: queue.Limit{Rate: 0.01, Burst: 3}}}
	trusted, _ := clientip.New([]string{"127.0.0.1/32", "::1/128"})
	e := newEnv(t, redistest.Client(t), limited, testTimeout, Options{ClientIP: trusted})
	path := "/api/v1/queues/" + e.queue + "/challenge"
	served := 0
	for range 20 {
		r := e.do("GET", path, "", "X-Forwarded-For", "198.51.100.1")
		if r.status == 200 {
			served++
			continue
		}
		wantError(t, r, 429, "rate_limited")
		var body httpkit.ErrorBody
		_ = json.Unmarshal(r.body, &body)
		if secs, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || secs < 1 || body.Error.RetryAt == "" {
			t.Fatalf("Retry-After %q, retry_at %q", r.header.Get("Retry-After"), body.Error.RetryAt)
		}
	}
	if served != 3 {
		t.Fatalf("one address got %d of 20 challenges, want its burst of 3", served)
	}
	if r := e.do("GET", path, "", "X-Forwarded-For", "198.51.100.2"); r.status != 200 {
		t.Fatalf("another address: %d %s", r.status, r.body)
	}
	for i := range 3 {
		if _, r := e.enterAnon("X-Forwarded-For", "198.51.100.1"); r.status != 200 {
			t.Fatalf("enter %d after the challenges: %d %s", i, r.status, r.body)
		}
	}
}

// An IPv6 client counts as its /64 in the per-client limits of enter,
// status and challenge: once one address of a block has used the budget,
// another address of the block is refused, and an address of the next
// block is not.
func TestRateLimitsGroupIPv6By64(t *testing.T) {
	t.Parallel()
	limited := queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour,
		Limits: queue.Limits{EnterPerClient: queue.Limit{Rate: 0.01, Burst: 2}, StatusPerClient: queue.Limit{Rate: 0.01, Burst: 2}}}
	trusted, _ := clientip.New([]string{"127.0.0.1/32", "::1/128"})
	e := newEnv(t, redistest.Client(t), limited, testTimeout, Options{ClientIP: trusted})
	me, _ := e.enterAnon("X-Forwarded-For", "192.0.2.1")
	api := "/api/v1/queues/" + e.queue
	for _, op := range []struct {
		name string
		call func(client string) response
	}{
		{"enter", func(c string) response { return e.do("POST", api+"/enter", "{}", "X-Forwarded-For", c) }},
		{"status", func(c string) response {
			return e.statusOf(append(bearerHeader(me.PlaceToken), "X-Forwarded-For", c)...)
		}},
		{"challenge", func(c string) response { return e.do("GET", api+"/challenge", "", "X-Forwarded-For", c) }},
	} {
		for i := range 2 {
			if r := op.call("2001:db8:1:2::1"); r.status != 200 {
				t.Fatalf("%s %d within the budget: %d %s", op.name, i, r.status, r.body)
			}
		}
		r := op.call("2001:db8:1:2:ffff:ffff:ffff:fffe")
		if r.status != 429 {
			t.Fatalf("%s from another address of the same /64: %d %s, want 429", op.name, r.status, r.body)
		}
		wantError(t, r, 429, "rate_limited")
		if r := op.call("2001:db8:1:3::1"); r.status != 200 {
			t.Fatalf("%s from the next /64: %d %s", op.name, r.status, r.body)
		}
	}
}

// The line's cap answers 503 queue_full with when to come back.
func TestQueueFullOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{})
	one := 1
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{MaxWaiting: &one}); err != nil {
		t.Fatal(err)
	}
	e.enterAnon() // admitted
	e.enterAnon() // the one place in line
	r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}")
	wantError(t, r, 503, "queue_full")
	var body httpkit.ErrorBody
	_ = json.Unmarshal(r.body, &body)
	if r.header.Get("Retry-After") == "" || body.Error.RetryAt == "" {
		t.Fatalf("no time to come back: %v %s", r.header, r.body)
	}
}

// The proof-of-work protocol end to end: challenge_required without a
// solution, a challenge at the queue's difficulty, a solution accepted
// once, and wrong, reused, foreign and edited ones refused.
func TestProofOfWorkOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{})
	base := "/api/v1/queues/" + e.queue
	var c publicapi.ChallengeResponse
	get := func() publicapi.ChallengeResponse {
		t.Helper()
		r := e.do("GET", base+"/challenge", "")
		var c publicapi.ChallengeResponse
		if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 || c.Challenge == "" {
			t.Fatalf("challenge: %d %s", r.status, r.body)
		}
		return c
	}
	if c = get(); c.Difficulty != 0 {
		t.Fatalf("difficulty %d with none set", c.Difficulty)
	}
	ten := 10
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{ChallengeDifficulty: &ten}); err != nil {
		t.Fatal(err)
	}
	wantError(t, e.do("POST", base+"/enter", "{}"), 403, "challenge_required")
	c = get()
	exp, err := time.Parse(time.RFC3339Nano, c.ExpiresAt)
	if c.Difficulty != 10 || err != nil || time.Until(exp) < time.Minute {
		t.Fatalf("challenge %+v", c)
	}
	solved := func(ch, nonce string) string {
		b, _ := json.Marshal(map[string]string{"challenge": ch, "nonce": nonce})
		return string(b)
	}
	nonce := challenge.Solve(c.Challenge, 10)
	wrong := "x"
	for challenge.LeadingZeroBits(c.Challenge, wrong) >= 10 {
		wrong += "x"
	}
	wantError(t, e.do("POST", base+"/enter", solved(c.Challenge, wrong)), 403, "challenge_required")
	if r := e.do("POST", base+"/enter", solved(c.Challenge, nonce)); r.status != 200 {
		t.Fatalf("a solved challenge: %d %s", r.status, r.body)
	}
	wantError(t, e.do("POST", base+"/enter", solved(c.Challenge, nonce)), 403, "challenge_required")
	// A challenge issued at a lower difficulty than the queue now asks.
	easy := get()
	eleven := 11
	_ = queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{ChallengeDifficulty: &eleven})
	wantError(t, e.do("POST", base+"/enter", solved(easy.Challenge, challenge.Solve(easy.Challenge, 10))), 403, "challenge_required")
	if n := e.waiting(); n != 1 {
		t.Fatalf("%d places, want the one solved enter", n)
	}
}

// A join refused by a defence changes nothing: the anonymous place the
// browser held stays in line (it is given up only once the join is
// through).
func TestRefusedJoinKeepsThePlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{Join: newJoin(t)})
	e.enterAnon()
	e.enterAnon()
	mine, resp := e.enterAnon()
	c := placeCookie(t, resp, e.queue)
	eight := 8
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{ChallengeDifficulty: &eight}); err != nil {
		t.Fatal(err)
	}
	tok := mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), jwt.MapClaims{"sub": "alice", "aud": e.queue, "exp": time.Now().Add(time.Hour).Unix()})
	r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", `{"join_token":"`+tok+`"}`, "Cookie", c.Name+"="+c.Value)
	wantError(t, r, 403, "challenge_required")
	if st := decodeTicket(t, e.statusOf(bearerHeader(mine.PlaceToken)...)); st.Status != queue.Waiting || st.Position != mine.Position {
		t.Fatalf("the anonymous place after a refused join: %+v, was %+v", st, mine)
	}
}
