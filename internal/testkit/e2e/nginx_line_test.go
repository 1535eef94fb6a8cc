package e2e

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The shipped nginx config caches the line's public document for a
// second, with proxy_cache_lock: a crowd reading it, each with its own
// cookies and credentials, costs the origin at most about one request a
// second, and every reader gets the origin's bytes. The entry is keyed on
// the server, not the client's Host: the site's own names share it, and a
// Host a client makes up is refused (421) without reaching the origin.
func TestNginxCachesTheLine(t *testing.T) {
	t.Parallel()
	bin := nginxPath(t)
	s := newStack(t, stackOptions{settings: fastTicks(1)})
	s.fillWaiting("crowd", 200)
	base := startNginx(t, bin, strings.TrimPrefix(s.url, "http://"), freePort(t))
	path := "/api/v1/queues/" + s.queue + "/line"
	origin := func() int { return s.calls.count(func(c call) bool { return c.path == path }) }

	// The document exists once the scheduler has read the line.
	wait.For(t, 30*time.Second, "the document", func() (bool, string) {
		res, err := http.Get(base + path)
		if err != nil {
			return false, err.Error()
		}
		res.Body.Close()
		return res.StatusCode == 200, res.Status
	})
	before := origin()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 32}, Timeout: 10 * time.Second}
	var ok, hits, reads, madeUp, refused atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			// Reads for 3 s: several of nginx's cache seconds.
			for i := 0; time.Since(start) < 3*time.Second; i++ {
				req, _ := http.NewRequest("GET", base+path, nil)
				if i%2 == 1 {
					// A made-up Host on every other read.
					madeUp.Add(1)
					req.Host = fmt.Sprintf("r%d-%d.example", g, rand.Uint64())
					res, err := client.Do(req)
					if err != nil {
						t.Error(err)
						return
					}
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
					if res.StatusCode == http.StatusMisdirectedRequest {
						refused.Add(1)
					}
					continue
				}
				reads.Add(1)
				if i%4 == 2 {
					req.Host = "localhost" // the site's other name: the same entry
				}
				req.Header.Set("Cookie", "__Host-wr_place_x=v2.reader."+string(rune('a'+g))+"; other=1")
				req.Header.Set("Authorization", "Bearer v2.some.token."+string(rune('a'+i%26)))
				res, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == 200 && res.Header.Get("Set-Cookie") == "" {
					ok.Add(1)
				}
				if res.Header.Get("X-Cache-Status") == "HIT" {
					hits.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	reached := origin() - before
	t.Logf("%d reads in %s through nginx (and %d with made-up Hosts): %d reached the origin, %d cache hits", ok.Load(), elapsed.Round(time.Millisecond), madeUp.Load(), reached, hits.Load())
	if ok.Load() != reads.Load() {
		t.Fatalf("%d of %d reads answered 200 without a cookie set", ok.Load(), reads.Load())
	}
	if refused.Load() != madeUp.Load() || madeUp.Load() < 100 {
		t.Fatalf("%d of %d reads with a made-up Host refused with 421", refused.Load(), madeUp.Load())
	}
	// One a second (nginx's seconds: an entry lasts until the second
	// after the one it came in), and one more at each end; and at least
	// one: the entry is renewed, not kept.
	if limit := int(elapsed/time.Second) + 3; reached > limit || reached < 1 {
		t.Fatalf("%d reads of %d reached the origin in %s, want 1 to %d", reached, ok.Load(), elapsed, limit)
	}
}
