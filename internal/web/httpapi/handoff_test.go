package httpapi

import (
	"bytes"
	"encoding/json"
	"image/png"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// A laptop's place moves to a phone over HTTP: the QR code, the same
// member and position with a new cookie, the laptop's credential refused
// on every endpoint (its cookie cleared), the hand-over used once, and
// the token never in the request log.
func TestHandoffOverHTTP(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	e := newEnv(t, redistest.Client(t), queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, testTimeout,
		Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	q := "/api/v1/queues/" + e.queue
	cookieOf := func(r response) string {
		for _, c := range (&http.Response{Header: r.header}).Cookies() {
			if c.Name == e.placeCookieName() {
				return c.Value
			}
		}
		return ""
	}
	enter := func(body string, header ...string) response {
		return e.do("POST", q+"/enter", body, header...)
	}
	enter("{}") // admitted at once: the laptop waits behind it
	r := enter("{}")
	laptop := cookieOf(r)
	var before publicapi.TicketResponse
	if err := json.Unmarshal(r.body, &before); err != nil || before.Status != queue.Waiting || laptop == "" {
		t.Fatalf("laptop enter: %d %s", r.status, r.body)
	}
	asLaptop := []string{"Cookie", e.placeCookieName() + "=" + laptop}

	r = e.do("POST", q+"/handoff", "", asLaptop...)
	var h publicapi.HandoffResponse
	if err := json.Unmarshal(r.body, &h); r.status != 201 || err != nil || h.Token == "" || len(h.Code) != 9 || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("handoff: %d %s %v", r.status, r.body, r.header)
	}
	if h.Path != "/q/"+e.queue+"?handoff="+h.Token {
		t.Errorf("path %q", h.Path)
	}
	r = e.do("GET", q+"/handoff/qr?token="+url.QueryEscape(h.Token), "", asLaptop...)
	if r.status != 200 || r.header.Get("Content-Type") != "image/png" || r.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("qr: %d %v", r.status, r.header)
	}
	if img, err := png.Decode(bytes.NewReader(r.body)); err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("qr image: %v", err)
	}
	// Only the holder gets the picture.
	if r := e.do("GET", q+"/handoff/qr?token="+url.QueryEscape(h.Token), ""); r.status != 401 {
		t.Errorf("qr without the credential: %d", r.status)
	}

	// The phone enters with the token and gets the place.
	r = enter(`{"handoff":"` + h.Token + `"}`)
	var after publicapi.TicketResponse
	if err := json.Unmarshal(r.body, &after); r.status != 200 || err != nil {
		t.Fatalf("phone enter: %d %s", r.status, r.body)
	}
	phone := cookieOf(r)
	if after.UserID != before.UserID || after.Position != before.Position || after.PlaceToken != phone || !strings.HasPrefix(phone, "v3.") {
		t.Fatalf("moved: %+v, before %+v, cookie %q", after, before, phone)
	}
	asPhone := []string{"Cookie", e.placeCookieName() + "=" + phone}
	if r := e.do("GET", q+"/status", "", asPhone...); r.status != 200 {
		t.Fatalf("phone status: %d %s", r.status, r.body)
	}

	// The laptop's credential, everywhere, as cookie and as bearer.
	for _, c := range []struct{ method, path, body string }{
		{"GET", q + "/status", ""},
		{"POST", q + "/enter", "{}"},
		{"DELETE", q + "/place", ""},
		{"POST", q + "/handoff", ""},
	} {
		for _, header := range [][]string{asLaptop, {"Authorization", "Bearer " + laptop}} {
			r := e.do(c.method, c.path, c.body, header...)
			if r.status != 401 || !strings.Contains(string(r.body), `"place_moved"`) {
				t.Errorf("%s %s with the laptop's credential: %d %s", c.method, c.path, r.status, r.body)
			}
			if header[0] == "Cookie" {
				if got := r.header.Get("Set-Cookie"); !strings.Contains(got, "Max-Age=0") {
					t.Errorf("%s %s: the moved cookie was kept: %q", c.method, c.path, got)
				}
			}
		}
	}
	// ...and the phone still holds the place where it was.
	r = e.do("GET", q+"/status", "", asPhone...)
	var still publicapi.TicketResponse
	if err := json.Unmarshal(r.body, &still); err != nil || still.Position != before.Position || still.UserID != before.UserID {
		t.Fatalf("phone after the laptop's tries: %d %s", r.status, r.body)
	}
	// Used once: the token and the code.
	for _, in := range []string{h.Token, h.Code, strings.ToLower(strings.ReplaceAll(h.Code, "-", " "))} {
		if r := enter(`{"handoff":"` + in + `"}`); r.status != 400 || !strings.Contains(string(r.body), `"invalid_handoff"`) {
			t.Errorf("reuse of %q: %d %s", in, r.status, r.body)
		}
	}
	if strings.Contains(logs.String(), h.Token) {
		t.Error("the token is in the request log")
	}
	if !strings.Contains(logs.String(), "/handoff/qr") {
		t.Error("the request log did not log the QR request at all: the check above proves nothing")
	}
}
