package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/testkit/clientaddr"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// TestAdaptUnmovedByOneHolder: with the README's
// example settings (refill 20, target 800 ms, 5 % errors, floor 2), one
// pass holder drips 20-byte bodies over 2 s from 4 connections at once,
// and another breaks its uploads off, while three people browse a
// healthy page: the effective refill stays at least 0.8 × refill_size
// throughout. Before, the drips' 2 s counted as the page's latency and
// the aborts as its errors: 20 → 2 in about 30 s. Then the page turns
// slow for everybody, and the rate does come down: the controller is
// alive, only the one holder cannot move it.
func TestAdaptUnmovedByOneHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: many ticks of the automatic rate against one holder, ~20 s; the whole suite runs it")
	}
	t.Parallel()
	var slow atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if slow.Load() {
			time.Sleep(1200 * time.Millisecond) // the page itself is slow
		}
		fmt.Fprint(w, "order page")
	}))
	t.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	e, store, name := newAdaptingEnv(t, ctx, &wg, upURL)
	clients := clientaddr.New(t)
	from := func(n int) []string { return []string{"X-Forwarded-For", clients.Addr(n)} }
	pass := func(n int) []string {
		tk, _ := e.enterAnon(from(n)...)
		if tk.Pass == "" {
			t.Fatalf("not admitted: %+v", tk)
		}
		return append(passCookie(e, tk.Pass), from(n)...)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	send := func(method string, body io.Reader, header []string) {
		req, _ := http.NewRequestWithContext(ctx, method, e.srv.URL+"/order", body)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		if res, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	every := func(gap time.Duration, f func()) {
		wg.Go(func() {
			tick := time.NewTicker(gap) // the traffic's pace
			defer tick.Stop()
			for ctx.Err() == nil {
				f()
				select {
				case <-ctx.Done():
				case <-tick.C:
				}
			}
		})
	}
	for n := range 3 { // people browsing
		h := pass(10 + n)
		every(200*time.Millisecond, func() { send("GET", nil, h) })
	}
	dripper := pass(1)
	for range 4 { // 20 bytes over 2 s, four at a time
		every(time.Millisecond, func() {
			pr, pw := io.Pipe()
			go func() {
				for range 20 {
					if _, err := pw.Write([]byte("a")); err != nil {
						return
					}
					time.Sleep(100 * time.Millisecond) // the drip's pace
				}
				pw.Close()
			}()
			send("POST", pr, dripper)
		})
	}
	aborter := pass(2)
	addr := strings.TrimPrefix(e.srv.URL, "http://")
	every(50*time.Millisecond, func() { // uploads cut short
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		fmt.Fprintf(conn, "POST /order HTTP/1.1\r\nHost: shop.test\r\n%s: %s\r\n%s: %s\r\nContent-Length: 1000\r\n\r\npartial", aborter[0], aborter[1], aborter[2], aborter[3])
		conn.Close()
	})

	// Not a wait: the rate must hold throughout 15 s of the attacks, so it
	// is read every 200 ms for all of them.
	lowest := 20
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		st, err := store.Adapt(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		lowest = min(lowest, st.RefillEffective)
		if lowest < 16 {
			t.Fatalf("refill_effective fell to %d under one holder's drips and aborts, want at least 16 (0.8 × 20)", lowest)
		}
	}
	t.Logf("lowest refill_effective over 15 s of the attacks: %d", lowest)
	slow.Store(true)
	wait.For(t, 30*time.Second, "a decrease once the page is slow for everybody", func() (bool, string) {
		st, err := store.Adapt(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		return st.RefillEffective < 20, fmt.Sprintf("refill_effective %d", st.RefillEffective)
	})
}

// newAdaptingEnv is a waitroom in gate mode in front of upURL whose queue
// (refill 20 a second) has the README's example controller settings on,
// with a runner and a scheduler running until ctx ends (wg waits for
// the runner).
func newAdaptingEnv(t *testing.T, ctx context.Context, wg *sync.WaitGroup, upURL *url.URL) (*env, *queue.Store, string) {
	t.Helper()
	rdb := redistest.Client(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	name := fmt.Sprintf("aa%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{name}, queue.Settings{RefillSize: 20, RefillInterval: time.Second, SessionTTL: time.Hour}, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	on, target, maxErr, floor := true, 800*time.Millisecond, 0.05, 2
	if err := queue.NewInspector(store).UpdateSettings(ctx, name, queue.Update{AdaptEnabled: &on, OriginTargetP95: &target, OriginMaxErrorRate: &maxErr, MinRefillSize: &floor}); err != nil {
		t.Fatal(err)
	}
	runner, err := autorate.New(autorate.Options{Store: store, Redis: rdb, Log: log, Timeout: testTimeout})
	if err != nil {
		t.Fatal(err)
	}
	wg.Go(func() { runner.Run(ctx) })
	sched, err := scheduler.Start(store, scheduler.Period(time.Second), log, nil, runner)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sched.Stop() })
	places, passes := newTrust(t, rdb)
	g := newTestGate(t, rdb, store, name, passes, nil, true)
	return newEnvWithStore(t, rdb, store, name, Options{Places: places, Passes: passes, Gate: g, ClientIP: behindProxy(t),
		Upstream: upstreamProxy(upURL, 10*time.Second, log, runner.Observe)}), store, name
}
