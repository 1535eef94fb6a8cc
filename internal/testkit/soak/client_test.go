package soak

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// The caller takes a place credential only if it verifies under the
// soak's secret, and reads an entry pass's adm.
func TestCallerReadsCredentialAndPass(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	places, err := place.New(secret)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := place.New([]byte("another secret, also 32 bytes ok"))
	pem, err := pass.GenerateKeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	keys, err := pass.ParseKeys(pem)
	if err != nil {
		t.Fatal(err)
	}
	passes, err := pass.New(keys, "https://soak.test")
	if err != nil {
		t.Fatal(err)
	}
	adm := time.UnixMilli(1700000000123)
	tok, err := passes.Issue(Queue, "a:good", adm, adm.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}

	credential := places.Issue(Queue, "a:good", 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: place.CookieName(Queue, false), Value: credential})
		_ = json.NewEncoder(w).Encode(ticket{Status: "ENTERED", Pass: tok})
	}))
	defer srv.Close()
	c := &caller{http: srv.Client(), urls: []string{srv.URL}, addr: clientAddr(1), pick: func(int) int { return 0 }, places: places}

	r := c.do(context.Background(), Enter)
	if r.op.Outcome != OK || r.op.Member != "a:good" || c.token != credential || r.op.Adm != adm.UnixMilli() || c.pass != tok {
		t.Fatalf("op %+v, caller token %q pass %q", r.op, c.token, c.pass)
	}

	// A credential under another secret names nobody: the caller keeps
	// the one it holds.
	credential = other.Issue(Queue, "a:forged", 0)
	r = c.do(context.Background(), Status)
	if r.op.Member != "a:good" || c.member != "a:good" {
		t.Fatalf("took a forged credential: op member %q, caller member %q", r.op.Member, c.member)
	}
}
