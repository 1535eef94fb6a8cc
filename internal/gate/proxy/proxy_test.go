package proxy

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestBodiesThroughReusedBuffers sends bodies of many sizes, around and
// well past the copy buffer's, through the proxy at once, each different:
// with the buffers reused between responses (copyBuffers), every client
// still gets exactly its own body.
func TestBodiesThroughReusedBuffers(t *testing.T) {
	body := func(n, seed int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + seed)
		}
		return b
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		seed, _ := strconv.Atoi(r.URL.Query().Get("seed"))
		_, _ = w.Write(body(n, seed))
	}))
	defer up.Close()
	u, err := url.Parse(up.URL)
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(Options{Upstream: u, Timeout: 10 * time.Second, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Limits: DefaultLimits()})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(h)
	defer front.Close()

	sizes := []int{0, 1, copyBufferSize - 1, copyBufferSize, copyBufferSize + 1, 3*copyBufferSize + 17, 200_000}
	var wg sync.WaitGroup
	errs := make(chan error, 8*len(sizes))
	for g := range 8 {
		for _, n := range sizes {
			wg.Go(func() {
				res, err := http.Get(fmt.Sprintf("%s/?n=%d&seed=%d", front.URL, n, g))
				if err != nil {
					errs <- err
					return
				}
				defer res.Body.Close()
				got, err := io.ReadAll(res.Body)
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, body(n, g)) {
					errs <- fmt.Errorf("size %d seed %d: got %d bytes, not the upstream's body", n, g, len(got))
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
