package gate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"testing"
)

// What the order page's commands cost an answer: the same response
// served as is ("without") and through the gate's commandWriter, which
// every answer of Handler passes through ("with": the page says nothing;
// "command": it says extend, carried out by a Commander that does no I/O,
// so the figure is the writer's own work, not Redis's). Two handlers: a
// reverse proxy to an order page on loopback (as waitroom's gate; the
// round trip is most of the time) and a handler writing the same answer
// in process (the writer's cost alone).
//
//	go test -run '^$' -bench CommandWriter -benchmem -count 5 ./gate/
func BenchmarkCommandWriter(b *testing.B) {
	page := []byte(`<!doctype html><title>Order</title><h1>Order page</h1>`)
	answer := func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Vary", "Cookie")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Set-Cookie", "cart=1; Path=/; HttpOnly")
		if r.URL.Path == "/command" {
			h.Set(HeaderCommand, CommandExtend)
		}
		_, _ = w.Write(page)
	}
	up := httptest.NewServer(http.HandlerFunc(answer))
	b.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(upURL) }, Transport: transport}
	g := &Gate{commander: benchCommander{}}

	for _, h := range []struct {
		name string
		h    http.Handler
	}{{"proxy", proxy}, {"handler", http.HandlerFunc(answer)}} {
		for _, c := range []struct {
			name, path string
			writer     bool
		}{{"without", "/", false}, {"with", "/", true}, {"command", "/command", true}} {
			b.Run(h.name+"/"+c.name, func(b *testing.B) {
				w := &benchWriter{}
				ctx := context.Background()
				req := httptest.NewRequest("GET", c.path, nil) // neither handler changes it
				for b.Loop() {
					w.h = make(http.Header)
					if !c.writer {
						h.h.ServeHTTP(w, req)
						continue
					}
					serve(h.h, &commandWriter{ResponseWriter: w, g: g, ctx: ctx, queue: "q", token: "pass"}, req)
				}
				if c.name == "command" && w.h.Get(HeaderCommand) != "" {
					b.Fatal("the command reached the client")
				}
			})
		}
	}
}

// benchCommander carries out nothing: the writer's cost alone.
type benchCommander struct{}

func (benchCommander) Command(context.Context, string, string, string) string { return "ok" }

// benchWriter keeps nothing but a fresh header map per request, as
// net/http's does.
type benchWriter struct{ h http.Header }

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *benchWriter) WriteHeader(int)             {}
