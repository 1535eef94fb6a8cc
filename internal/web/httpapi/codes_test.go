package httpapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/lockout"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/web/adminapi"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// testCodes are invitation codes keyed with a test secret.
func testCodes(t testing.TB) *invite.Codes {
	t.Helper()
	codes, err := invite.New([]byte("httpapi-test-secret-for-codes-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	return codes
}

// codesEnv is a server with invitation codes on, behind a trusted proxy
// (the tests name each caller's address in X-Forwarded-For), over a queue
// with a "vip" lane whose one token is taken, so newcomers wait.
func codesEnv(t testing.TB, opts Options) *env {
	t.Helper()
	opts.Codes, opts.AdminToken = testCodes(t), adminToken
	if opts.ClientIP == nil {
		opts.ClientIP, _ = clientip.New([]string{"127.0.0.0/8", "::1"}) // valid prefixes
	}
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: slow.RefillInterval, SessionTTL: slow.SessionTTL}, testTimeout, opts)
	lanes := queue.Lanes{{Name: "vip", Share: 0.5}}
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	e.enterFrom("192.0.2.1", "", "") // takes the token
	return e
}

// enterFrom enters from addr with a place cookie (""; none) and an
// invitation code ("": none), and returns the answer.
func (e *env) enterFrom(addr, cookie, code string) response {
	e.t.Helper()
	body := "{}"
	if code != "" {
		b, _ := json.Marshal(map[string]string{"invite_code": code})
		body = string(b)
	}
	h := []string{"X-Forwarded-For", addr}
	if cookie != "" {
		h = append(h, "Cookie", e.placeCookieName()+"="+cookie)
	}
	return e.do("POST", "/api/v1/queues/"+e.queue+"/enter", body, h...)
}

// cookieOf is the place cookie r sets ("": none).
func cookieOf(e *env, r response) string {
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == e.placeCookieName() {
			return c.Value
		}
	}
	return ""
}

// makeCodes makes n codes for lane through the admin API.
func (e *env) makeCodes(t testing.TB, body string) adminapi.CreateCodesResponse {
	t.Helper()
	r := e.do("POST", "/admin/v1/queues/"+e.queue+"/codes", body, "Authorization", "Bearer "+adminToken)
	var out adminapi.CreateCodesResponse
	if r.status != 201 || json.Unmarshal(r.body, &out) != nil {
		t.Fatalf("create codes %s: %d %s", body, r.status, r.body)
	}
	return out
}

var madeCode = regexp.MustCompile(`^[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}-[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{4}$`)

// TestInvitationCodes: an operator makes codes (JSON and CSV) and uploads
// some; a newcomer's code puts the new place in the lane, a waiting
// place's moves it there at its arrival number; a spent, wrong or revoked
// code is 403 invalid_code and changes nothing; the batches list their
// uses; every change is audited with its actor; a viewer may do none of it.
func TestInvitationCodes(t *testing.T) {
	t.Parallel()
	e := codesEnv(t, Options{})
	path := "/admin/v1/queues/" + e.queue + "/codes"
	auth := []string{"Authorization", "Bearer " + adminToken}

	made := e.makeCodes(t, `{"lane":"vip","n":3}`)
	if len(made.Codes) != 3 || made.Batch.Lane != "vip" || made.Batch.Uses != 1 || made.Batch.Codes != 3 || made.Batch.By == nil {
		t.Fatalf("made: %+v", made)
	}
	for _, c := range made.Codes {
		if !madeCode.MatchString(c) {
			t.Fatalf("code %q is not 3 groups of 4 unambiguous characters", c)
		}
	}
	r := e.do("POST", path, `{"lane":"vip","n":2,"uses":2}`, append(auth, "Accept", "text/csv")...)
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if r.status != 201 || err != nil || len(rows) != 3 || rows[0][0] != "code" || !madeCode.MatchString(rows[1][0]) || r.header.Get("Waitroom-Batch") == "" {
		t.Fatalf("CSV: %d %q %v", r.status, r.body, err)
	}
	up := e.makeCodes(t, `{"lane":"vip","codes":["Summer-Guest-0001","summer guest 0002"]}`)
	if len(up.Codes) != 0 || !up.Batch.Uploaded || up.Batch.Codes != 2 {
		t.Fatalf("upload: %+v", up)
	}
	for body, code := range map[string]string{
		`{"lane":"vip","n":0}`:                       "invalid_codes",
		`{"lane":"vip","n":100001}`:                  "invalid_codes",
		`{"lane":"vip","n":1,"uses":0}`:              "invalid_codes",
		`{"lane":"vip","n":1,"expires_at":"never"}`:  "invalid_codes",
		`{"lane":"vip","n":1,"codes":["ABCDEFGH"]}`:  "invalid_codes",
		`{"lane":"vip","codes":["short"]}`:           "invalid_codes",
		`{"lane":"nosuch","n":1}`:                    "invalid_lane",
		`{"lane":"vip","codes":["SUMMERGUEST0001"]}`: "code_exists",
		`{"lane":"vip","n":1,"extra":1}`:             "invalid_json",
	} {
		r := e.do("POST", path, body, auth...)
		var eb httpkit.ErrorBody
		if json.Unmarshal(r.body, &eb) != nil || eb.Error.Code != code || r.status >= 500 {
			t.Errorf("%s: %d %s, want %s", body, r.status, r.body, code)
		}
	}

	// A newcomer with a code: a new place, in the lane.
	r = e.enterFrom("192.0.2.10", "", strings.ToLower(made.Codes[0]))
	tk := decodeTicket(t, r)
	if tk.Lane != "vip" || tk.Status != "WAITING" || tk.Position != 1 {
		t.Fatalf("newcomer with a code: %+v", tk)
	}
	if c := cookieOf(e, r); c == "" || !strings.Contains(c, ".") {
		t.Fatal("no place cookie for the lane's place")
	}
	// The code is spent: another newcomer gets 403 and no place.
	wantError(t, e.enterFrom("192.0.2.11", "", made.Codes[0]), 403, "invalid_code")

	// A place waiting in the general line moves at its arrival number.
	first := e.enterFrom("192.0.2.12", "", "")
	second := e.enterFrom("192.0.2.13", "", "")
	waiting := decodeTicket(t, first)
	if waiting.Lane != "" || decodeTicket(t, second).Position != waiting.Position+1 {
		t.Fatalf("general places: %+v", waiting)
	}
	moved := e.enterFrom("192.0.2.12", cookieOf(e, first), "summer-guest-0001")
	tk = decodeTicket(t, moved)
	if tk.Lane != "vip" || tk.Position != 2 {
		t.Fatalf("moved: %+v, want second in the vip lane", tk)
	}
	r = e.do("GET", "/api/v1/queues/"+e.queue+"/status", "", "Cookie", e.placeCookieName()+"="+cookieOf(e, second), "X-Forwarded-For", "192.0.2.13")
	if got := decodeTicket(t, r); got.Position != waiting.Position {
		t.Fatalf("the place behind: %+v, want it moved up to %d", got, waiting.Position)
	}
	// The old cookie names a place that is gone; the new one holds it.
	r = e.do("GET", "/api/v1/queues/"+e.queue+"/status", "", "Cookie", e.placeCookieName()+"="+cookieOf(e, moved), "X-Forwarded-For", "192.0.2.12")
	if got := decodeTicket(t, r); got.Lane != "vip" || got.Position != 2 {
		t.Fatalf("status of the moved place: %+v", got)
	}

	// Revoked: its unused codes are refused.
	r = e.do("DELETE", path+"/"+made.Batch.ID, "", auth...)
	if r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	wantError(t, e.do("DELETE", path+"/nosuch", "", auth...), 404, "batch_not_found")
	wantError(t, e.enterFrom("192.0.2.14", "", made.Codes[1]), 403, "invalid_code")

	r = e.do("GET", path, "", auth...)
	var list adminapi.CodeBatchesResponse
	if r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Batches) != 3 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	used := map[string]int64{}
	for _, b := range list.Batches {
		used[b.ID] = b.Used
		if b.ID == made.Batch.ID && b.RevokedAt == "" {
			t.Errorf("revoked batch listed without revoked_at: %+v", b)
		}
	}
	if used[made.Batch.ID] != 1 || used[up.Batch.ID] != 1 {
		t.Fatalf("uses spent: %v", used)
	}

	// Audited with the actor.
	r = e.do("GET", "/admin/v1/queues/"+e.queue+"/audit", "", auth...)
	for _, want := range []string{`"action":"codes_created"`, `"action":"codes_revoked"`, `"target":"` + made.Batch.ID + `"`, `"actor"`} {
		if !strings.Contains(string(r.body), want) {
			t.Errorf("audit log lacks %s: %s", want, r.body)
		}
	}
	// No code, nor a digest, in the audit log.
	if strings.Contains(string(r.body), made.Codes[2]) {
		t.Error("the audit log holds a code")
	}

	// A viewer may not make, list or revoke codes.
	_, viewer := e.newToken(t, `{"name":"grafana","role":"viewer","expires_in_s":3600}`)
	for _, m := range []string{"POST", "GET"} {
		wantError(t, e.do(m, path, `{"lane":"vip","n":1}`, "Authorization", "Bearer "+viewer), 403, "forbidden_role")
	}
	wantError(t, e.do("DELETE", path+"/"+up.Batch.ID, "", "Authorization", "Bearer "+viewer), 403, "forbidden_role")
}

// TestCodeGuessing: 10,000 guesses from five addresses in two networks
// find nothing: the guard judges at most 10 an address and 30 a network
// before locking them (an hour's worth of locks follows), the rest are
// 429 too_many_code_attempts without a look at the code; no guess gets a
// place in the lane, no use is spent, and a person on another network
// still redeems their code.
func TestCodeGuessing(t *testing.T) {
	t.Parallel()
	e := codesEnv(t, Options{})
	made := e.makeCodes(t, `{"lane":"vip","n":1000}`)
	guessers := []string{"198.51.100.1", "198.51.100.2", "198.51.100.3", "203.0.113.1", "203.0.113.2"}
	const guesses = 10_000
	var mu sync.Mutex
	answers := map[string]int{}
	var wg sync.WaitGroup
	for g, addr := range guessers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 7))
			for i := g; i < guesses; i += len(guessers) {
				code := invite.Make(1)[0]
				if i%3 == 0 { // near misses too: a real code with one letter changed
					c := []byte(made.Codes[rnd.IntN(len(made.Codes))])
					c[0] = invite.Alphabet[(strings.IndexByte(invite.Alphabet, c[0])+1)%len(invite.Alphabet)]
					code = string(c)
				}
				r := e.enterFrom(addr, "", code)
				var eb httpkit.ErrorBody
				_ = json.Unmarshal(r.body, &eb)
				mu.Lock()
				answers[fmt.Sprintf("%s %d %s", addr[:strings.LastIndexByte(addr, '.')], r.status, eb.Error.Code)]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("10,000 guesses from 5 addresses in 2 networks: %v", answers)
	judged := map[string]int{}
	for k, n := range answers {
		f := strings.Fields(k)
		switch f[1] + " " + f[2] {
		case "403 invalid_code":
			judged[f[0]] += n
		case "429 too_many_code_attempts":
		default:
			t.Errorf("%d guesses answered %s", n, k)
		}
	}
	// Three addresses of one /24 share its 30; two of another get 10 each.
	if judged["198.51.100"] > 30 || judged["203.0.113"] > 20 {
		t.Errorf("guesses judged: %v; want at most 30 and 20", judged)
	}
	ctx := context.Background()
	if n, _ := e.rdb.ZCard(ctx, rediskeys.Lane(e.queue, "vip", "waiting")).Result(); n != 0 {
		t.Fatalf("%d places in the lane after guessing", n)
	}
	bs, _ := queue.NewInspector(e.store).CodeBatches(ctx, e.queue)
	if len(bs) != 1 || bs[0].Used != 0 {
		t.Fatalf("uses spent by guessing: %+v", bs)
	}
	// A locked address is refused even with a real code; another network is not.
	wantError(t, e.enterFrom("198.51.100.1", "", made.Codes[0]), 429, "too_many_code_attempts")
	if tk := decodeTicket(t, e.enterFrom("192.0.2.77", "", made.Codes[0])); tk.Lane != "vip" {
		t.Fatalf("a person on another network: %+v", tk)
	}
}

// FuzzInviteCode: invite_code crosses a trust boundary. Whatever string
// it is, the enter answers 403 invalid_code or a 400 with a stable code,
// never a 5xx, and no place reaches the lane. (go test runs the seeds and
// a few hundred random strings; go test -fuzz=FuzzInviteCode searches.)
func FuzzInviteCode(f *testing.F) {
	for _, s := range []string{"", " ", "-", "A", "ABCDEFGH", "abcd-efgh-jkmn", strings.Repeat("A", 64), strings.Repeat("A", 65),
		strings.Repeat("A-", 64), strings.Repeat("A-", 65), "ÄBCDEFGH", "\x00\x00\x00\x00\x00\x00\x00\x00", "\xff\xfe", "\u2028",
		"ABCD EFGH", "{}", `"`, "\\", "%00", "ABCDEFGH\n", "l:vip:x", "1 abc vip", strings.Repeat("Z", 10000)} {
		f.Add(s)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := make([]byte, rnd.IntN(80))
		for i := range b {
			b[i] = byte(rnd.IntN(256))
			if rnd.IntN(2) == 0 {
				b[i] = invite.Alphabet[rnd.IntN(len(invite.Alphabet))]
			}
		}
		f.Add(string(b))
	}
	// No lockout: every string must reach the code's judgment.
	never := lockout.Policy{MaxFailures: 1 << 30, Window: 1, BaseLock: 1, MaxLock: 1, Memory: 1}
	guard, err := invite.NewGuard(redistest.Client(f), never, never)
	if err != nil {
		f.Fatal(err)
	}
	e := codesEnv(f, Options{CodeGuard: guard})
	e.makeCodes(f, `{"lane":"vip","n":10}`)
	var mu sync.Mutex // e.t is the input's
	f.Fuzz(func(t *testing.T, code string) {
		if code == "" {
			return // no code: the usual enter
		}
		mu.Lock()
		defer mu.Unlock()
		e.t = t
		body := `{"invite_code":` + jsonString(code) + `}`
		r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", body, "X-Forwarded-For", "192.0.2.200")
		var eb httpkit.ErrorBody
		if err := json.Unmarshal(r.body, &eb); err != nil {
			t.Fatalf("%q: %d %s", code, r.status, r.body)
		}
		ok := (r.status == 403 && eb.Error.Code == "invalid_code") ||
			(r.status == 400 && (eb.Error.Code == "invalid_json")) ||
			(r.status == 413 && eb.Error.Code == "body_too_large")
		if !ok {
			t.Fatalf("invite_code %q: %d %s", code, r.status, r.body)
		}
		if n, _ := e.rdb.ZCard(context.Background(), rediskeys.Lane(e.queue, "vip", "waiting")).Result(); n != 0 {
			t.Fatalf("invite_code %q put a place in the lane", code)
		}
	})
}

// jsonString is s as a JSON string, its bytes as they are where they are
// not valid UTF-8 (json.Marshal would mend them): the strict decoder
// must refuse them itself.
func jsonString(s string) string {
	if utf8.ValidString(s) {
		b, _ := json.Marshal(s)
		return string(b)
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// checkCodes is the contract test's calls of the invitation codes: the
// admin routes and enter's invite_code, each validated against
// api/openapi.yaml. off is a server without codes.
func (k *contract) checkCodes(t *testing.T, rdb *redis.Client, off *env) {
	e := k.newEnv(t, rdb, queue.Settings{RefillSize: 1, RefillInterval: slow.RefillInterval, SessionTTL: slow.SessionTTL},
		Options{AdminToken: adminToken, Codes: testCodes(t)})
	lanes := queue.Lanes{{Name: "vip", Share: 0.5}}
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	path := "/admin/v1/queues/" + e.queue + "/codes"
	enter := "/api/v1/queues/" + e.queue + "/enter"
	auth := []string{"Authorization", "Bearer " + adminToken, "Content-Type", "application/json"}
	jsonCT := []string{"Content-Type", "application/json"}
	k.check(t, e, call{method: "POST", path: enter, body: `{}`, header: jsonCT, status: 200}) // takes the token

	r := k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","n":2,"uses":1,"expires_at":null}`, header: auth, status: 201})
	var made adminapi.CreateCodesResponse
	if err := json.Unmarshal(r.body, &made); err != nil || len(made.Codes) != 2 {
		t.Fatalf("made: %s", r.body)
	}
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","n":1}`, header: append(slices.Clone(auth), "Accept", "text/csv"), status: 201})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","codes":["CONTRACT-0001"],"expires_at":"2999-01-01T00:00:00Z"}`, header: auth, status: 201})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","codes":["CONTRACT-0001"]}`, header: auth, status: 409, code: "code_exists"})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","n":1,"codes":["ABCDEFGH"]}`, header: auth, status: 400, code: "invalid_codes"})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","n":0}`, header: auth, status: 400, code: "invalid_codes", docRejects: true})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"nosuch","n":1}`, header: auth, status: 400, code: "invalid_lane"})
	k.check(t, e, call{method: "POST", path: "/admin/v1/queues/nope/codes", body: `{"lane":"vip","n":1}`, header: auth, status: 404, code: "queue_not_found"})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","n":1}`, header: jsonCT, status: 401, code: "unauthorized", docRejects: true})
	k.check(t, off, call{method: "POST", path: "/admin/v1/queues/" + off.queue + "/codes", body: `{"lane":"vip","n":1}`, header: auth, status: 404, code: "codes_disabled"})
	k.check(t, e, call{method: "GET", path: path, header: auth, status: 200})
	k.check(t, e, call{method: "GET", path: "/admin/v1/queues/nope/codes", header: auth, status: 404, code: "queue_not_found"})
	k.check(t, e, call{method: "POST", path: path, body: `{"lane":"vip","codes":["` + strings.Repeat("A", 14<<20) + `"]}`, header: auth, status: 413, code: "body_too_large", docRejects: true})

	k.check(t, e, call{method: "POST", path: enter, body: `{"invite_code":"` + made.Codes[0] + `"}`, header: jsonCT, status: 200})
	k.check(t, e, call{method: "POST", path: enter, body: `{"invite_code":"` + made.Codes[0] + `"}`, header: jsonCT, status: 403, code: "invalid_code"})
	k.check(t, e, call{method: "DELETE", path: path + "/" + made.Batch.ID, header: auth, status: 204})
	k.check(t, e, call{method: "DELETE", path: path + "/nosuch", header: auth, status: 404, code: "batch_not_found"})
	k.check(t, e, call{method: "POST", path: enter, body: `{"invite_code":"WRONG-CODE-0000"}`, header: jsonCT, status: 429, code: "too_many_code_attempts", sendAgainOn: 403})
}
