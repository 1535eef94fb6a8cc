package httpkit

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5/middleware"
)

// requestIDShape is what a request id may be: what the logs and the audit
// log ever hold.
var requestIDShape = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// seenRequestID is the id the handlers behind RequestID read, for a
// request whose X-Request-Id headers are values (none: no header).
func seenRequestID(values ...string) string {
	var got string
	h := RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = middleware.GetReqID(r.Context())
	}))
	r := httptest.NewRequest("GET", "/", nil)
	if values != nil {
		r.Header["X-Request-Id"] = values // as sent, unchecked by any client
	}
	h.ServeHTTP(httptest.NewRecorder(), r)
	return got
}

// checkRequestID: whatever a client sends, the id is of the allowed
// shape, and it is the client's own exactly when that one was.
func checkRequestID(t *testing.T, sent string) {
	t.Helper()
	got := seenRequestID(sent)
	if !requestIDShape.MatchString(got) {
		t.Fatalf("sent %.80q: id %.80q (%d bytes) is not 1-64 of [A-Za-z0-9._-]", sent, got, len(got))
	}
	if kept, valid := got == sent, requestIDShape.MatchString(sent); kept != valid {
		t.Fatalf("sent %.80q (valid %v): id %.80q", sent, valid, got)
	}
}

func TestRequestIDShape(t *testing.T) {
	for _, sent := range []string{
		"", "a", "0", ".", "-", "_", "op-7f3a.change_1", "550e8400-e29b-41d4-a716-446655440000",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("x", 1<<20),
		" ", " abc", "abc ", "two words", "tab\there", "line\nbreak", "cr\rlf\r\nX-Injected: 1", "nul\x00",
		"naïve", "日本語", "\xff\xfe", "a/b", "a+b", "a=b", "%0d%0a", `"}`, "host.example/Zx8KpQ2mWc-000001", // chi's own ids have a '/'
		strings.Repeat("é", 32), // 64 bytes, not ASCII
	} {
		checkRequestID(t, sent)
	}
	// Random values from an alphabet of allowed and refused characters,
	// around the length bound.
	const alphabet = "azAZ09._-" + " /+:\r\n\t\x00\x7féø日"
	rng := rand.New(rand.NewPCG(1, 2))
	runes := []rune(alphabet)
	for range 20000 {
		n := rng.IntN(80)
		if rng.IntN(2) == 0 {
			n = 60 + rng.IntN(10) // 60-69: across the bound
		}
		var b strings.Builder
		allowed := rng.IntN(3) > 0 // mostly allowed characters only, so valid ids are common
		for range n {
			if allowed {
				b.WriteRune(runes[rng.IntN(9)])
			} else {
				b.WriteRune(runes[rng.IntN(len(runes))])
			}
		}
		checkRequestID(t, b.String())
	}
	// No header, and several: the first is the one.
	if got := seenRequestID(); !requestIDShape.MatchString(got) {
		t.Fatalf("no header: id %q", got)
	}
	if got := seenRequestID("first", "second"); got != "first" {
		t.Fatalf("two headers: id %q, want the first", got)
	}
	if got := seenRequestID("bad one", "second"); got == "second" || !requestIDShape.MatchString(got) {
		t.Fatalf("an invalid first header: id %q, want one of waitroom's", got)
	}
}

func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"", "abc", strings.Repeat("a", 64), strings.Repeat("a", 65), "a b", "a\r\nb", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sent string) { checkRequestID(t, sent) })
}

// The ids waitroom makes are distinct, from any number of goroutines.
func TestRequestIDsDistinct(t *testing.T) {
	const goroutines, each = 8, 1000
	ids := make(chan string, goroutines*each)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				ids <- seenRequestID()
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] || !requestIDShape.MatchString(id) {
			t.Fatalf("id %q repeated or of the wrong shape", id)
		}
		seen[id] = true
	}
}

// A fresh id is spelled out when asked for: every ask within a request
// gets the same one, and the request's context is otherwise its parent's
// (values, cancellation).
func TestRequestIDStableWithinARequest(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "parent's"))
	var first, second string
	var value any
	var done <-chan struct{}
	RequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first, second = middleware.GetReqID(r.Context()), middleware.GetReqID(r.Context())
		value, done = r.Context().Value(key{}), r.Context().Done()
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(parent))
	if first != second || !requestIDShape.MatchString(first) {
		t.Errorf("asked twice: %q, then %q", first, second)
	}
	if value != "parent's" {
		t.Errorf("the parent's value: %v", value)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("cancelling the parent did not cancel the request's context")
	}
}

// BenchmarkRequestID compares RequestID with chi's RequestID, which it
// replaced, with and without a client's id.
//
//	go test -run '^$' -bench RequestID -benchmem ./internal/web/httpapi/
func BenchmarkRequestID(b *testing.B) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, mw := range []struct {
		name string
		wrap func(http.Handler) http.Handler
	}{{"chi", middleware.RequestID}, {"own", RequestID}} {
		h := mw.wrap(next)
		for _, header := range []string{"", "op-7f3a.change_1"} {
			r := httptest.NewRequest("GET", "/", nil)
			name := mw.name + "/made"
			if header != "" {
				r.Header.Set("X-Request-Id", header)
				name = mw.name + "/client"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					h.ServeHTTP(nil, r)
				}
			})
		}
	}
}
