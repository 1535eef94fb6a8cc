package webhook_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/ops/webhook"
)

// receiver is docs/WEBHOOKS.md's Go receiver ("Events for your site"): it
// checks the signature in constant time, refuses a timestamp more than
// five minutes away, and hands the body on. Keep the two the same.
func receiver(secret []byte, handle func(body []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		var ts string
		var sigs []string
		for _, part := range strings.Split(r.Header.Get("Waitroom-Signature"), ",") {
			k, v, _ := strings.Cut(part, "=")
			if k == "t" {
				ts = v
			} else if k == "v1" {
				sigs = append(sigs, v) // a header may carry several: any may match
			}
		}
		sec, err := strconv.ParseUint(ts, 10, 64) // digits only
		if err != nil || len(ts) > 12 || time.Since(time.Unix(int64(sec), 0)).Abs() > 5*time.Minute {
			http.Error(w, "old or missing timestamp", http.StatusUnauthorized)
			return
		}
		mac := hmac.New(sha256.New, secret)
		fmt.Fprintf(mac, "%s.%s", ts, body)
		want := []byte(hex.EncodeToString(mac.Sum(nil)))
		if !slices.ContainsFunc(sigs, func(sig string) bool { return hmac.Equal([]byte(sig), want) }) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		handle(body) // a delivery may come twice: drop events whose id you have seen
		w.WriteHeader(http.StatusNoContent)
	}
}

// The receiver takes a signed delivery, and refuses a tampered body and a
// replay of an old one.
func Example_receiver() {
	secret := []byte("an example secret of at least 32 bytes")
	srv := httptest.NewServer(receiver(secret, func(body []byte) { fmt.Println("handled", string(body)) }))
	defer srv.Close()

	send := func(what string, signedAt time.Time, signed, sent string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(sent))
		req.Header.Set(webhook.SignatureHeader, webhook.Sign(secret, signedAt, []byte(signed)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(what, resp.StatusCode)
	}
	body := `{"events":[{"id":"q.1-0.0","type":"admitted","queue":"q","sub":"u1","time":"2026-11-24T19:00:00Z"}]}`
	send("signed:", time.Now(), body, body)
	send("tampered:", time.Now(), body, strings.Replace(body, "u1", "u2", 1))
	send("replayed:", time.Now().Add(-6*time.Minute), body, body)
	// Output:
	// handled {"events":[{"id":"q.1-0.0","type":"admitted","queue":"q","sub":"u1","time":"2026-11-24T19:00:00Z"}]}
	// signed: 204
	// tampered: 401
	// replayed: 401
}

// TestDocReceiverIsTheExample: docs/WEBHOOKS.md shows the receiver this
// file runs, word for word.
func TestDocReceiverIsTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(webhooksDoc)
	if err != nil {
		t.Fatal(err)
	}
	start := strings.Index(string(src), "func receiver(")
	end := strings.Index(string(src)[start:], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatal("no receiver in example_test.go")
	}
	if fn := string(src)[start : start+end+3]; !strings.Contains(string(doc), "```go\n"+fn+"```") {
		t.Fatalf("%s's Go receiver is not example_test.go's:\n%s", webhooksDoc, fn)
	}
}
