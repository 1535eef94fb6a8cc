package httpkit

import (
	"bufio"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"
)

// The recorder records what the handler wrote and passes every call on,
// as chi's WrapResponseWriter did.
func TestRecorderPassesCallsOn(t *testing.T) {
	for _, tc := range []struct {
		name       string
		handle     func(w http.ResponseWriter)
		status     int // recorded
		bytes      int
		sentStatus int // what the client got
		body       string
	}{
		{"nothing written", func(w http.ResponseWriter) {}, 0, 0, 200, ""},
		{"write only", func(w http.ResponseWriter) { io.WriteString(w, "hello") }, 200, 5, 200, "hello"},
		{"status then body", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusTeapot)
			io.WriteString(w, "tea")
			io.WriteString(w, "pot")
		}, 418, 6, 418, "teapot"},
		{"second WriteHeader dropped", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusAccepted)
			w.WriteHeader(http.StatusInternalServerError)
		}, 202, 0, 202, ""},
		{"informational passes through", func(w http.ResponseWriter) {
			w.Header().Set("Link", "</app.css>; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
		}, 201, 0, 201, ""},
		{"ReadFrom", func(w http.ResponseWriter) {
			// A reader without WriteTo, as http.ServeContent's io.CopyN hands
			// over: io.Copy then uses the writer's ReadFrom.
			if _, err := io.Copy(w, iotest.OneByteReader(strings.NewReader("copied"))); err != nil {
				t.Error(err)
			}
		}, 200, 6, 200, "copied"},
		{"Flush", func(w http.ResponseWriter) {
			io.WriteString(w, "early")
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Error(err)
			}
			w.(http.Flusher).Flush()
		}, 200, 5, 200, "early"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var status, bytes int
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rw := newRecorder(w)
				tc.handle(rw)
				status, bytes = rw.Status(), rw.bytes
				rw.release()
			}))
			defer srv.Close()
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if status != tc.status || bytes != tc.bytes || resp.StatusCode != tc.sentStatus || string(body) != tc.body {
				t.Errorf("recorded %d, %d bytes; sent %d %q; want recorded %d, %d bytes, sent %d %q",
					status, bytes, resp.StatusCode, body, tc.status, tc.bytes, tc.sentStatus, tc.body)
			}
		})
	}
}

// Hijack reaches the connection, directly and through
// http.ResponseController (the gate's proxy, for upgrades).
func TestRecorderHijacks(t *testing.T) {
	for _, viaController := range []bool{false, true} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rw := newRecorder(w)
			defer rw.release()
			var (
				c   net.Conn
				b   *bufio.ReadWriter
				err error
			)
			if viaController {
				c, b, err = http.NewResponseController(rw).Hijack()
			} else {
				c, b, err = rw.Hijack()
			}
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			b.WriteString("HTTP/1.1 299 Hijacked\r\nContent-Length: 0\r\n\r\n")
			b.Flush()
		}))
		resp, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != 299 {
			t.Errorf("via controller %v: status %d, want the hijacked connection's 299", viaController, resp.StatusCode)
		}
	}
}

// The access log, with nothing to log, allocates nothing: its recorder
// comes from a pool.
func TestAccessLogAllocatesNothing(t *testing.T) {
	s := NewResponder(slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})), nil)
	h := s.LogRequests(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }))
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/v1/queues/q/status", nil)
	h.ServeHTTP(w, req)
	if allocs := testing.AllocsPerRun(100, func() { h.ServeHTTP(w, req) }); allocs != 0 {
		t.Errorf("%v allocations per request, want 0", allocs)
	}
}
