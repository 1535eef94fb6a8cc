// Command wr-adapt measures how the order page's health drives the
// admission rate (scripts/adapt.sh runs it). "run" sets a
// queue's settings through the admin API, keeps its line full of users
// who poll as told and, once admitted, place one order through waitroom's
// reverse-proxy gate (cmd/wr-orders behind it), and writes one CSV row a
// second: orders answered, their p95 over the last 5 s, the queue's
// refill_effective. At the end it adds the admissions of each interval
// from the queue's history. "plot" draws two such runs in one PNG
// (plot.go).
//
//	wr-adapt run -url http://127.0.0.1:8080 -token T -queue default -refill 20 -adapt=false -duration 3m -out fixed.csv
//	wr-adapt plot -fixed fixed.csv -adapt adapt.csv -capacity 10 -target 800ms -out docs/adapt.png
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "run":
		err = runCmd(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "plot":
		err = plotCmd(os.Args[2:])
	default:
		err = fmt.Errorf("usage: wr-adapt run|plot [flags]")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "wr-adapt:", err)
		os.Exit(1)
	}
}

type runner struct {
	base, token, queue string
	think              time.Duration
	client             *http.Client
	seq                atomic.Int64 // user ids and their addresses
	waiting            atomic.Int64 // users between enter and admission

	mu     sync.Mutex
	orders []order // answered orders
}

type order struct {
	at     time.Time // answered
	took   time.Duration
	status int
}

func runCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8080", "waitroom's base URL (gate mode, cmd/wr-orders upstream)")
	token := fs.String("token", "", "WAITROOM_ADMIN_TOKEN")
	queue := fs.String("queue", "default", "queue")
	refill := fs.Int("refill", 20, "refill_size")
	adapt := fs.Bool("adapt", false, "adapt_enabled")
	target := fs.Duration("target", 800*time.Millisecond, "origin_target_p95_ms")
	floor := fs.Int("floor", 1, "min_refill_size")
	line := fs.Int("line", 100, "users kept waiting in the line")
	think := fs.Duration("think", 2*time.Second, "an admitted user orders after a uniformly random time below this (reading the page)")
	duration := fs.Duration("duration", 3*time.Minute, "how long to run")
	out := fs.String("out", "", "CSV file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r := &runner{base: *base, token: *token, queue: *queue, think: *think,
		client: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}}
	err := r.admin(ctx, http.MethodPatch, "", map[string]any{"refill_size": *refill, "adapt_enabled": *adapt,
		"origin_target_p95_ms": target.Milliseconds(), "min_refill_size": *floor}, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *duration)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	// The feeder keeps the line at least line long.
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for ctx.Err() == nil {
			for r.waiting.Load() < int64(*line) {
				r.waiting.Add(1)
				wg.Add(1)
				go func() { defer wg.Done(); r.user(ctx) }()
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	type second struct {
		effective, waiting int64
	}
	var samples []second
	t := time.NewTicker(time.Second)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			var v struct {
				RefillEffective int64 `json:"refill_effective"`
				Waiting         int64 `json:"waiting"`
			}
			_ = r.admin(context.WithoutCancel(ctx), http.MethodGet, "", nil, &v)
			samples = append(samples, second{v.RefillEffective, v.Waiting})
		}
	}
	t.Stop()
	var hist struct {
		Points []struct {
			AtMS     int64 `json:"at_ms"`
			Admitted int64 `json:"admitted"`
		} `json:"points"`
	}
	if err := r.admin(context.Background(), http.MethodGet, "/history", nil, &hist); err != nil {
		return err
	}
	// Stop the users (their orders in flight are dropped: the run is over).
	wg.Wait()

	// One row a second.
	n := len(samples)
	admitted := make([]int64, n)
	for _, p := range hist.Points {
		if i := int(time.UnixMilli(p.AtMS).Sub(start) / time.Second); i >= 0 && i < n {
			admitted[i] += p.Admitted
		}
	}
	r.mu.Lock()
	orders := r.orders
	r.mu.Unlock()
	var buf bytes.Buffer
	buf.WriteString("second,admitted,orders,errors,p95_ms,refill_effective,waiting\n")
	for i := range n {
		end := start.Add(time.Duration(i+1) * time.Second)
		var took []time.Duration
		done, errs := 0, 0
		for _, o := range orders {
			if o.at.After(end.Add(-5*time.Second)) && !o.at.After(end) {
				took = append(took, o.took)
			}
			if o.at.After(end.Add(-time.Second)) && !o.at.After(end) {
				done++
				if o.status != http.StatusOK {
					errs++
				}
			}
		}
		fmt.Fprintf(&buf, "%d,%d,%d,%d,%d,%d,%d\n", i+1, admitted[i], done, errs, p95(took).Milliseconds(), samples[i].effective, samples[i].waiting)
	}
	if *out == "" {
		_, err := os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(*out, buf.Bytes(), 0o644)
}

// user enters, polls as told until admitted, and orders once.
func (r *runner) user(ctx context.Context) {
	admittedOnce := false
	defer func() {
		if !admittedOnce {
			r.waiting.Add(-1)
		}
	}()
	id := r.seq.Add(1)
	// An address of its own, as a crowd has (the per-client limits), in
	// a network (/24) of its own: the price of a place asks a network's
	// third place for proof of work, which this crowd does not pay.
	xff := userAddr(id)
	// The app's flow (package client): enter, then poll as told. One
	// send a call, as before: a refusal ends the user, whom the feeder
	// replaces. MinPoll 100 ms: the service's poll_after_ms alone paces
	// the polls, as before.
	c, err := client.New(client.Options{BaseURL: r.base, Queue: r.queue, MaxAttempts: 1, MinPoll: 100 * time.Millisecond,
		HTTPClient: &http.Client{Timeout: r.client.Timeout, Transport: fromAddr{r.client.Transport, xff}}})
	if err != nil {
		return
	}
	t, err := c.Enter(ctx, client.EnterOptions{})
	if err == nil && t.Status == client.Waiting {
		t, err = c.Wait(ctx, nil)
	}
	if err != nil || t.Status != client.Entered {
		return
	}
	admittedOnce = true
	r.waiting.Add(-1)
	// A person reads the page before ordering: the orders of one tick's
	// admissions reach the page spread out, as a crowd's clicks do.
	select {
	case <-ctx.Done():
		return
	case <-time.After(rand.N(max(r.think, 1))):
	}
	start := time.Now()
	status := 0
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.base+"/buy", nil)
	req.Header.Set("Authorization", "Bearer "+t.Pass)
	req.Header.Set("X-Forwarded-For", xff)
	if resp, err := r.client.Do(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
	} else if ctx.Err() != nil {
		return // the run ended first: not an answer
	}
	r.mu.Lock()
	r.orders = append(r.orders, order{at: time.Now(), took: time.Since(start), status: status})
	r.mu.Unlock()
}

func (r *runner) call(ctx context.Context, method, path, xff, auth string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if v != nil {
		return json.Unmarshal(b, v)
	}
	return nil
}

func (r *runner) admin(ctx context.Context, method, sub string, in, out any) error {
	var body []byte
	if in != nil {
		body, _ = json.Marshal(in)
	}
	return r.call(ctx, method, "/admin/v1/queues/"+r.queue+sub, "", "Bearer "+r.token, body, out)
}

// p95 is the nearest-rank 95th percentile (0 for none).
func p95(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)*95+99)/100-1]
}

// fromAddr sends each request as sent from addr, behind the trusted
// proxy (X-Forwarded-For).
type fromAddr struct {
	next http.RoundTripper
	addr string
}

func (f fromAddr) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("X-Forwarded-For", f.addr)
	return f.next.RoundTrip(req)
}

// userAddr is user id's address: x.y.z.1 in a /24 of its own for each id
// below 100 * 2^16, never loopback or private (11.0.0.1 on).
func userAddr(id int64) string {
	return fmt.Sprintf("%d.%d.%d.1", 11+id>>16%100, id>>8&255, id&255)
}
