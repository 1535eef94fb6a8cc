package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/trust/place"
)

func TestScheduleOrder(t *testing.T) {
	s := newSchedule(0)
	r := rand.New(rand.NewPCG(1, 2))
	var want []int64
	for i := range 10000 {
		d := r.Int64N(1000) // many equal due times
		want = append(want, d)
		s.push(call{due: d, user: int32(i)})
	}
	slices.Sort(want)
	// Pop in slices of time, as the dispatcher does.
	var got []int64
	for now := int64(0); now < 1000; now += 37 {
		var due []call
		due, next, ok := s.popDue(now, due)
		for _, c := range due {
			if c.due > now {
				t.Fatalf("popped %d at %d", c.due, now)
			}
			got = append(got, c.due)
		}
		if ok && next <= now {
			t.Fatalf("next %d is already due at %d", next, now)
		}
	}
	due, _, ok := s.popDue(1000, nil)
	for _, c := range due {
		got = append(got, c.due)
	}
	if ok || s.len() != 0 {
		t.Fatalf("%d calls left", s.len())
	}
	if !slices.Equal(got, want) {
		t.Fatal("calls did not come out in due order")
	}
}

// Workers push while the dispatcher pops: every call comes out once.
func TestScheduleConcurrent(t *testing.T) {
	s := newSchedule(0)
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				s.push(call{due: int64(i), user: int32(w*each + i)})
			}
		})
	}
	seen := make([]bool, workers*each)
	n := 0
	var due []call
	for n < workers*each {
		due, _, _ = s.popDue(each, due[:0])
		for _, c := range due {
			if seen[c.user] {
				t.Fatalf("user %d popped twice", c.user)
			}
			seen[c.user] = true
			n++
		}
	}
	wg.Wait()
}

func TestHistQuantiles(t *testing.T) {
	var h hist
	for v := int64(1); v <= 100000; v++ {
		h.add(v)
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := q * 100000
		got := float64(h.quantile(q))
		if got < want || got > want*1.016+1 {
			t.Errorf("q%.3f = %.0f, want %.0f (at most 1.6 %% above)", q, got, want)
		}
	}
	if h.quantile(1) != 100000 || h.max != 100000 {
		t.Errorf("max %d, q1 %d", h.max, h.quantile(1))
	}
	// Bucket bounds are contiguous and each value falls in its own.
	for v := int64(0); v < 1<<20; v += 1 + v/500 {
		b := bucketOf(v)
		if v > bucketTop(b) || (b > 0 && v <= bucketTop(b-1)) {
			t.Fatalf("%d in bucket %d (top %d, previous top %d)", v, b, bucketTop(b), bucketTop(b-1))
		}
	}
	if b := bucketOf(1<<63 - 1); b >= histBuckets {
		t.Fatalf("max int64 in bucket %d of %d", b, histBuckets)
	}
}

func TestTicketFields(t *testing.T) {
	body := []byte(`{"queue":"default","user_id":"p_x","status":"WAITING","position":42,"waiting":1000,"eta_seconds":25,"poll_after_ms":5600,"place_token":"abc.DEF-_"}`)
	if v, ok := jsonString(body, "status"); !ok || string(v) != "WAITING" {
		t.Errorf("status %q %v", v, ok)
	}
	if v, ok := jsonString(body, "place_token"); !ok || string(v) != "abc.DEF-_" {
		t.Errorf("place_token %q %v", v, ok)
	}
	if v, ok := jsonInt(body, "position"); !ok || v != 42 {
		t.Errorf("position %d %v", v, ok)
	}
	if v, ok := jsonInt(body, "poll_after_ms"); !ok || v != 5600 {
		t.Errorf("poll_after_ms %d %v", v, ok)
	}
	if _, ok := jsonString(body, "pass"); ok {
		t.Error("found a pass that is not there")
	}
}

// The hand-written client against Go's own server: keep-alive, bodies of
// any size, a status other than 200, and a server that closes.
func TestConn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/queues/q/status":
			fmt.Fprintf(w, `{"status":"WAITING","auth":%q,"xff":%q}`, r.Header.Get("Authorization"), r.Header.Get("X-Forwarded-For"))
		case "/api/v1/queues/q/enter":
			w.Header().Set("Connection", "close")
			w.Header().Set("Content-Length", "10000") // else Go chunks a body this long
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, strings.Repeat("x", 10000))
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := &conn{addr: host}
	defer c.close()
	for i, want := range []string{"11.0.0.0", "11.0.158.55", "11.1.60.110"} {
		code, body, err := c.do(appendStatusRequest(nil, host, "q", true, int32(i), fmt.Sprint("tok", i)))
		if err != nil || code != 200 || string(body) != fmt.Sprintf(`{"status":"WAITING","auth":"Bearer tok%d","xff":%q}`, i, want) {
			t.Fatalf("status %d: %d %q %v", i, code, body, err)
		}
	}
	code, body, err := c.do(appendStatusRequest(nil, host, "q", false, 7, "tok"))
	if err != nil || code != 200 || string(body) != `{"status":"WAITING","auth":"Bearer tok","xff":""}` {
		t.Fatalf("status without xff: %d %q %v", code, body, err)
	}
	code, body, err = c.do(appendEnterRequest(nil, host, "q", true, 1))
	if err != nil || code != 503 || len(body) != 10000 {
		t.Fatalf("enter: %d, %d bytes, %v", code, len(body), err)
	}
	if c.c != nil {
		t.Fatal("connection kept after Connection: close")
	}
	if code, _, err := c.do(appendStatusRequest(nil, host, "q", true, 3, "again")); err != nil || code != 200 {
		t.Fatalf("after a close: %d %v", code, err)
	}
}

// Every user calls from an address of its own: distinct, valid, public
// looking (not loopback, private or unspecified), and the same as
// scripts/lib.sh's wr_client_addr (checked on a few values).
func TestClientAddr(t *testing.T) {
	seen := make(map[netip.Addr]int64)
	for _, n := range []int64{0, 1, 1 << 24, 1<<24 + 1, 99<<24 + 5, 100 << 24} {
		seen[netip.MustParseAddr(string(appendClientAddr(nil, n)))] = -1
	}
	if len(seen) != 5 { // distinct below 100 << 24 only: that is 0's address again
		t.Fatalf("%d addresses: %v", len(seen), seen)
	}
	clear(seen)
	for n := range int64(1 << 20) {
		a, err := netip.ParseAddr(string(appendClientAddr(nil, n)))
		if err != nil || !a.Is4() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() {
			t.Fatalf("%d: %v %v", n, a, err)
		}
		if m, dup := seen[a]; dup {
			t.Fatalf("%d and %d share %v", m, n, a)
		}
		seen[a] = n
	}
	for n, want := range map[int64]string{0: "11.0.0.0", 2: "11.1.60.110", 256: "11.158.55.0", 1 << 24: "12.0.0.0"} {
		if got := string(appendClientAddr(nil, n)); got != want {
			t.Errorf("%d: %s, want %s", n, got, want)
		}
	}
}

func TestReadResponseNoLength(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"))
	if _, _, err := readResponse(r, nil, func() {}); err == nil {
		t.Fatal("no error for a body without Content-Length")
	}
}

// The pieces of the run that need no server: flags and a report.
func TestFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-users", "0"}); err == nil {
		t.Error("-users 0 accepted")
	}
	c, err := parseFlags([]string{"-users", "10", "-duration", "1s"})
	if err != nil || c.users != 10 || c.duration != time.Second {
		t.Errorf("%+v %v", c, err)
	}
}

func TestReadCPUTimes(t *testing.T) {
	cpus, err := readCPUTimes()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("%d CPUs, %v", len(cpus), err)
	}
	for _, c := range cpus {
		if c.busy > c.all || c.softirq > c.busy {
			t.Errorf("%+v", c)
		}
	}
}

func TestBurstFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-burst", "-1"},
		{"-burst", "10", "-burst-for", "2m", "-duration", "1m"},
		{"-burst", "10", "-burst-conns", "0"},
		{"-idle-timeout", "-1s"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	c, err := parseFlags([]string{"-users", "10", "-burst", "5", "-burst-for", "1s", "-duration", "2s"})
	if err != nil || c.burst != 5 || c.burstFor != time.Second || c.idleTimeout != 75*time.Second {
		t.Errorf("%+v %v", c, err)
	}
}

func TestSeqAndMember(t *testing.T) {
	creds, err := place.New([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	m := place.NewMember()
	seq, member, err := seqAndMember(creds.Issue("q", m, 12345))
	if err != nil || seq != 12345 || member != m {
		t.Errorf("got %d %q %v, want 12345 %q", seq, member, err, m)
	}
	if _, _, err := seqAndMember("v1.q.bWVtYmVy.mac"); err == nil {
		t.Error("a v1 credential read")
	}
}

func TestFIFO(t *testing.T) {
	// A answered before B and C were sent; B and C overlap each other.
	recs := []rec{
		{sent: 0, ack: 10, seq: 1},
		{sent: 20, ack: 40, seq: 3},
		{sent: 25, ack: 30, seq: 2},
	}
	if pairs, breaks, first := fifo(recs); pairs != 2 || breaks != 0 {
		t.Errorf("in order: %d pairs, %d breaks %s", pairs, breaks, first)
	}
	recs[0].seq = 5 // A, acknowledged first, behind B and C
	if _, breaks, _ := fifo(recs); breaks != 2 {
		t.Errorf("out of order: %d breaks, want 2", breaks)
	}
}
