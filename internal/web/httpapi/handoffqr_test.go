package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// testPublicURL is the test servers' WAITROOM_PUBLIC_URL.
const testPublicURL = "https://waitroom.test"

// qrPlace enters a waiting place and makes a hand-over of it: the
// place's cookie header and the hand-over's token.
func (e *env) qrPlace() (cookie []string, token string) {
	e.t.Helper()
	q := "/api/v1/queues/" + e.queue
	r := e.do("POST", q+"/enter", "{}")
	var tk publicapi.TicketResponse
	if err := json.Unmarshal(r.body, &tk); err != nil || tk.Status != queue.Waiting {
		e.t.Fatalf("enter: %d %s", r.status, r.body)
	}
	cookie = []string{"Cookie", e.placeCookieName() + "=" + tk.PlaceToken}
	r = e.do("POST", q+"/handoff", "", cookie...)
	var h publicapi.HandoffResponse
	if err := json.Unmarshal(r.body, &h); r.status != 201 || err != nil {
		e.t.Fatalf("handoff: %d %s", r.status, r.body)
	}
	return cookie, h.Token
}

// qrWithHost asks for token's QR code with the request's Host set to host.
func (e *env) qrWithHost(host, token string, cookie []string) response {
	e.t.Helper()
	req, err := http.NewRequest("GET", e.srv.URL+"/api/v1/queues/"+e.queue+"/handoff/qr?token="+url.QueryEscape(token), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Host = host
	req.Header.Set(cookie[0], cookie[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("qr with Host %.40q: %v", host, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// genHost is a Host header a client could send: a name or address of
// up to 2,150 bytes, with or without a port (fixed seed: reproducible).
func genHost(rng *rand.Rand) string {
	const chars = "abcdefghijklmnopqrstuvwxyz0123456789.-"
	var b strings.Builder
	n := 1 + rng.IntN(2150)
	if rng.IntN(4) == 0 {
		n = 1 + rng.IntN(30)
	}
	for range n {
		b.WriteByte(chars[rng.IntN(len(chars))])
	}
	switch rng.IntN(3) {
	case 0:
		b.WriteString(":" + strconv.Itoa(1+rng.IntN(65535)))
	case 1:
		return "[::" + strconv.FormatInt(int64(rng.IntN(0xffff)), 16) + "]"
	}
	return b.String()
}

// The QR code's link is on the public URL whatever Host the
// request names (a 2 kB Host once forced a version-40 code, 17.8 ms of
// CPU each): over generated Hosts, the picture is byte for byte the one
// of the public link.
func TestHandoffQRNeverFromHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{})
	e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}") // admitted: the others wait
	rng := rand.New(rand.NewPCG(26, 6))
	// Within one client's burst (handoff.QRPerClient): each place is new.
	for i := range handoff.QRPerClient - 1 {
		host := genHost(rng)
		if i == 0 {
			host = strings.Repeat("h", 2150)
		}
		cookie, token := e.qrPlace()
		r := e.qrWithHost(host, token, cookie)
		want, err := handoff.QR(testPublicURL + handoff.Path(e.queue, token))
		if err != nil {
			t.Fatal(err)
		}
		if r.status != 200 || r.header.Get("Content-Type") != "image/png" || !bytes.Equal(r.body, want) {
			t.Fatalf("Host %.60q (%d bytes): %d %s, not the picture of %s", host, len(host), r.status, r.header.Get("Content-Type"), testPublicURL)
		}
	}
}

// One place asking for its QR code again and again is
// answered 429 rate_limited with Retry-After once over its burst.
func TestHandoffQRRateLimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout, Options{})
	e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}")
	cookie, token := e.qrPlace()
	start := time.Now()
	served := 0
	for range 10 * handoff.QRPerPlace {
		r := e.qrWithHost("waitroom.test", token, cookie)
		if r.status == 200 {
			served++
			continue
		}
		secs, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != http.StatusTooManyRequests || !strings.Contains(string(r.body), `"code":"rate_limited"`) || err != nil || secs < 1 {
			t.Fatalf("over the limit: %d %q %s", r.status, r.header.Get("Retry-After"), r.body)
		}
		// The burst, and one more per QRPlaceEvery since the first.
		if most := handoff.QRPerPlace + 1 + int(time.Since(start)/handoff.QRPlaceEvery); served > most {
			t.Fatalf("%d pictures before the first 429, want at most %d", served, most)
		}
		return
	}
	t.Fatalf("%d requests in %s, none refused", 10*handoff.QRPerPlace, time.Since(start))
}
