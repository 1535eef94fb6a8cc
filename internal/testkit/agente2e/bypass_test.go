package agente2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// enterAPI enters queue q as an app does (no browser: no Origin) and
// returns its ticket.
func (s *site) enterAPI(q string) map[string]any {
	s.t.Helper()
	resp, err := http.Post(s.wr+"/api/v1/queues/"+q+"/enter", "application/json", strings.NewReader("{}"))
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var tk map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil {
		s.t.Fatal(err)
	}
	return tk
}

// book calls the shop's booking API as any client could, with the
// headers given.
func (s *site) book(header ...string) int {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.shop+"/api/book", strings.NewReader(`{"items":["KTX 101 · 06:00"]}`))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// Whatever a page's script says, the shop's API books only with a real
// pass for its queue whose admission has not ended: in the browser (skip
// the wait, forge the agent's answer, set flags and a forged credential),
// and from any client with generated variants of a real pass.
func TestBypassRefused(t *testing.T) {
	settings := still
	settings.RefillSize = 1000 // passes at once, for the variants
	s := newSite(t, settings)
	tk := s.enterAPI(s.queue)
	real, _ := tk["pass"].(string)
	if tk["status"] != "ENTERED" || real == "" {
		t.Fatalf("no pass to start from: %v", tk)
	}
	if code := s.book("Authorization", "Bearer "+real); code != http.StatusOK {
		t.Fatalf("the real pass books: %d, want 200", code)
	}
	other, _ := s.enterAPI(s.other)["pass"].(string)
	if other == "" {
		t.Fatal("no pass for the other queue")
	}

	// In the browser, on the shop's page.
	b := newBrowser(t)
	b.expect("401")
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	attempts := map[string]string{
		"skip the wait":        `fetch('/api/book', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"items":["x"]}'})`,
		"a made-up pass":       `fetch('/api/book', {method: 'POST', headers: {'Content-Type': 'application/json', Authorization: 'Bearer forged'}, body: '{"items":["x"]}'})`,
		"the header pass":      `fetch('/api/book', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Waitroom-Pass': 'forged'}, body: '{"items":["x"]}'})`,
		"an unsigned pass":     fmt.Sprintf(`fetch('/api/book', {method: 'POST', headers: {'Content-Type': 'application/json', Authorization: 'Bearer %s'}, body: '{"items":["x"]}'})`, unsigned(real)),
		"another queue's pass": fmt.Sprintf(`fetch('/api/book', {method: 'POST', headers: {'Content-Type': 'application/json', Authorization: 'Bearer %s'}, body: '{"items":["x"]}'})`, other),
		"a pass in the query":  fmt.Sprintf(`fetch('/api/book?wr_pass=%s', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"items":["x"]}'})`, unsigned(real)),
	}
	for name, call := range attempts {
		if code := evalAsync[int](tb, `(async () => (await `+call+`).status)()`); code != http.StatusUnauthorized && code != http.StatusBadRequest {
			t.Errorf("%s: the shop answered %d", name, code)
		}
	}
	// Flags and a forged answer: a page that replaces the agent's wait,
	// and a forged credential in the agent's storage, book nothing.
	forged := evalAsync[int](tb, `(async () => {
  window.waitroom = { wait: async () => ({ pass: 'forged', expiresAt: new Date(Date.now() + 60000) }) };
  localStorage.setItem('waitroom:skip', 'true');
  const { pass } = await window.waitroom.wait({ queue: 'x' });
  return (await fetch('/api/book', { method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + pass }, body: '{"items":["x"]}' })).status;
})()`)
	if forged != http.StatusUnauthorized {
		t.Errorf("a forged {pass}: the shop answered %d", forged)
	}
	// A forged credential in the agent's own storage does not skip the
	// line: the agent is refused it and takes a place like anyone.
	s.fill(1)
	eval[bool](tb, fmt.Sprintf(`(() => { localStorage.setItem(%q, JSON.stringify({ token: 'v2.%s.forged' })); return true; })()`, "waitroom:"+s.wr+":"+s.queue, s.queue))
	tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
	tb.click(`#book`)
	tb.waitJS("a place in line, not a pass", fmt.Sprintf(`%s && %s === '2'`, dialogOpen, agentText("position")))
	if r := tb.text(`document.getElementById('result').textContent`); r != "" {
		t.Errorf("the page booked behind a forged credential: %q", r)
	}

	// Generated variants of the real pass: every change of a byte, a
	// segment, a claim (re-encoded under the old signature), the algorithm
	// or the header's form is refused.
	rng := rand.New(rand.NewPCG(39, 2026))
	refused := 0
	for i, v := range passVariants(rng, real, 300) {
		code := s.book(v.header, v.value)
		if code == http.StatusOK {
			t.Errorf("variant %d (%s) booked", i, v.what)
		}
		refused++
	}
	t.Logf("%d generated variants refused", refused)

	// A pass whose admission ended (the holder left) stops booking within
	// the middleware's recheck interval.
	token, _ := tk["place_token"].(string)
	req, _ := http.NewRequest("DELETE", s.wr+"/api/v1/queues/"+s.queue+"/place", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("leave: %d", resp.StatusCode)
	}
	wait.For(t, 15*time.Second, "the ended admission's pass refused", func() (bool, string) {
		code := s.book("Authorization", "Bearer "+real)
		return code == http.StatusUnauthorized, fmt.Sprint(code)
	})
}

// unsigned is the pass re-signed with "none": its claims, no signature.
func unsigned(pass string) string {
	parts := strings.Split(pass, ".")
	h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	return h + "." + parts[1] + "."
}

type variant struct{ what, header, value string }

// passVariants are n forgeries made from a real pass.
func passVariants(rng *rand.Rand, real string, n int) []variant {
	parts := strings.Split(real, ".")
	var claims map[string]any
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	_ = json.Unmarshal(raw, &claims)
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	fixed := []variant{
		{"alg none", "Authorization", "Bearer " + unsigned(real)},
		{"no signature", "Authorization", "Bearer " + parts[0] + "." + parts[1] + "."},
		{"HS256 header", "Authorization", "Bearer " + enc(map[string]string{"alg": "HS256", "typ": "JWT"}) + "." + parts[1] + "." + parts[2]},
		{"four segments", "Authorization", "Bearer " + real + ".x"},
		{"two segments", "Authorization", "Bearer " + parts[0] + "." + parts[1]},
		{"the pass twice", "Authorization", "Bearer " + real + " " + real},
		{"basic scheme", "Authorization", "Basic " + real},
		{"no scheme", "Authorization", real},
		{"empty", "Authorization", "Bearer "},
		{"X-Waitroom-Pass with a forged pass", "X-Waitroom-Pass", unsigned(real)},
	}
	out := fixed
	for len(out) < n {
		switch rng.IntN(3) {
		case 0: // one character of one segment changed
			seg := rng.IntN(3)
			p := append([]string(nil), parts...)
			b := []byte(p[seg])
			i := rng.IntN(len(b))
			c := alphabet[rng.IntN(len(alphabet))]
			if b[i] == c || (seg == 2 && i == len(b)-1) {
				continue // the same pass, or a last character whose low bits base64 ignores
			}
			b[i] = c
			p[seg] = string(b)
			out = append(out, variant{fmt.Sprintf("segment %d byte %d", seg, i), "Authorization", "Bearer " + strings.Join(p, ".")})
		case 1: // a claim changed, the old signature kept
			c := map[string]any{}
			for k, v := range claims {
				c[k] = v
			}
			keys := []string{"aud", "sub", "exp", "iss", "jti", "nbf", "iat"}
			k := keys[rng.IntN(len(keys))]
			switch k {
			case "exp", "nbf", "iat":
				c[k] = time.Now().Add(time.Duration(rng.IntN(1e6)) * time.Second).Unix()
			default:
				c[k] = fmt.Sprintf("forged-%d", rng.IntN(1e6))
			}
			out = append(out, variant{"claim " + k, "Authorization", "Bearer " + parts[0] + "." + enc(c) + "." + parts[2]})
		default: // bytes appended or cut
			cut := rng.IntN(len(real))
			out = append(out, variant{fmt.Sprintf("cut at %d", cut), "Authorization", "Bearer " + real[:cut]})
		}
	}
	return out
}
