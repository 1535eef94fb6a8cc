package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/gate"
)

// Waitroom-Command crosses a trust boundary: the order page writes it, the
// gate acts on it. Whatever the page sends (any case, spaces, commas,
// several lines, unknown words, long values, control bytes, the name in
// any spelling, as a trailer or in a 1xx answer), through the reverse-proxy
// gate and the Go middleware alike:
//   - the client never sees it (the raw bytes of the answer are searched);
//   - only one header line that is exactly done or extend (without the
//     spaces and tabs around it) acts, and only for a request let in with a
//     valid pass; a trailer or a 1xx answer never acts;
//   - the answer is never a 5xx and no handler panics. Through the proxy, a
//     value holding a byte HTTP forbids in a field (a control byte), or a
//     trailer past 4 KB, makes the order page's answer one Go's client
//     refuses (502, or an answer broken off): the test checks that the same
//     lines in another header do exactly the same, so the command's
//     handling adds nothing.
//
// The seeds are generated; `go test -fuzz FuzzGateCommand` explores further.

// The ways a page can send a command (fuzz argument form).
const (
	formHeader        = iota // a header, WriteHeader then the body
	formQuiet                // a header, and the handler writes nothing
	formTrailer              // announced in Trailer, set after the body
	formTrailerPrefix        // http.TrailerPrefix, set after the body
	formEarly                // in a 103 answer only, not in the answer
	forms
)

// commandSpellings are the names the page writes the header under.
var commandSpellings = []string{gate.HeaderCommand, "waitroom-command", "WAITROOM-COMMAND"}

// pageCommand is what one request's page says: lines of the field name
// (several lines when more than one), sent as form.
type pageCommand struct {
	name  string
	lines []string
	form  int
}

// write answers as c says, with the body "order page".
func (c pageCommand) write(w http.ResponseWriter) {
	h := w.Header()
	body := func() {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, "order page")
	}
	switch c.form {
	case formHeader:
		h[c.name] = c.lines
		body()
	case formQuiet:
		h[c.name] = c.lines
	case formTrailer:
		h.Set("Trailer", c.name)
		body()
		h[http.CanonicalHeaderKey(c.name)] = c.lines
	case formTrailerPrefix:
		body()
		h[http.TrailerPrefix+c.name] = c.lines
	case formEarly:
		h[c.name] = c.lines
		w.WriteHeader(http.StatusEarlyHints)
		delete(h, c.name)
		body()
	}
}

// acts reports whether c must act for a request with a valid pass.
func (c pageCommand) acts() bool {
	if (c.form != formHeader && c.form != formQuiet) || len(c.lines) != 1 {
		return false
	}
	v := textproto.TrimString(c.lines[0])
	return v == gate.CommandDone || v == gate.CommandExtend
}

// orderPages hands each request's pageCommand to the page answering it, by
// the id ending its path.
type orderPages struct {
	mu sync.Mutex
	n  int
	by map[string]pageCommand
}

func (p *orderPages) add(c pageCommand) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	id := fmt.Sprint(p.n)
	p.by[id] = c
	return id
}

func (p *orderPages) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	p.mu.Lock()
	c, ok := p.by[id]
	delete(p.by, id)
	p.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	c.write(w)
}

// rawAnswer is what a client received, byte for byte.
type rawAnswer struct {
	raw    []byte
	status int // the final answer's; 0: broken off or unreadable
}

// rawGet sends GET path to addr over a connection of its own and reads
// the answer to its end.
func rawGet(t *testing.T, addr, path string, header ...string) rawAnswer {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: shop.test\r\nConnection: close\r\nAccept: application/json\r\nTE: trailers\r\n", path)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&req, "%s: %s\r\n", header[i], header[i+1])
	}
	req.WriteString("\r\n")
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil && !isTimeout(err) {
		t.Logf("reading the answer: %v", err) // a reset: broken off
	}
	a := rawAnswer{raw: raw}
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return a
		}
		if resp.StatusCode >= 200 {
			if _, err := io.ReadAll(resp.Body); err == nil {
				a.status = resp.StatusCode
			}
			return a
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func FuzzGateCommand(f *testing.F) {
	for _, s := range commandSeeds() {
		f.Add(s.value, s.form, s.spelling)
	}
	pg := &orderPages{by: map[string]pageCommand{}}
	up := httptest.NewServer(pg)
	f.Cleanup(up.Close)
	upURL, _ := url.Parse(up.URL)
	e, rec := newCommandEnvFor(f, upURL, 100_000)

	// The Go middleware in front of the same page, carrying commands to e.
	var heardMu sync.Mutex
	var heard []string // "queue command result"
	ctx, cancel := context.WithCancel(context.Background())
	f.Cleanup(cancel)
	g, err := gate.New(ctx, gate.Options{
		Queue: e.queue, Issuer: testIssuer, JWKSURL: e.srv.URL + "/.well-known/jwks.json", VerifyURL: e.srv.URL + "/api/v1/verify",
		CommandURL: e.srv.URL + "/api/v1/queues/{queue}/commands", Bypass: []string{"/static/"},
		OnCommand: func(q, cmd, result string) {
			heardMu.Lock()
			heard = append(heard, q+" "+cmd+" "+result)
			heardMu.Unlock()
		},
	})
	if err != nil {
		f.Fatal(err)
	}
	mw := httptest.NewServer(g.Handler(pg))
	f.Cleanup(mw.Close)

	proxyAddr := strings.TrimPrefix(e.srv.URL, "http://")
	mwAddr := strings.TrimPrefix(mw.URL, "http://")
	var pass string // the current admission's, "" once done ended it
	n := 0

	f.Fuzz(func(t *testing.T, value string, form, spelling uint8) {
		e := e.with(t)
		defer func() {
			if t.Failed() {
				pass = "" // the next input starts from a fresh admission
			}
		}()
		c := pageCommand{
			name:  commandSpellings[int(spelling)%len(commandSpellings)],
			lines: strings.Split(value, "\n"),
			form:  int(form) % forms,
		}
		for _, through := range []struct {
			name, addr string
			proxy      bool
		}{{"proxy", proxyAddr, true}, {"middleware", mwAddr, false}} {
			for _, withPass := range []bool{false, true} {
				if withPass && pass == "" {
					n++
					pass = e.admittedPassFrom(fmt.Sprintf("10.%d.%d.1", n/256%256, n%256))
				}
				heardMu.Lock()
				heard = heard[:0]
				heardMu.Unlock()
				before := rec.reached(e.queue)
				path, h := "/static/order/", []string(nil)
				if withPass {
					path, h = "/order/", bearerHeader(pass)
				}
				a := rawGet(t, through.addr, path+pg.add(c), h...)
				what := fmt.Sprintf("%s, pass %v, form %d, %q: %.300q", through.name, withPass, c.form, c.name, c.lines)
				if i := bytes.Index(bytes.ToLower(a.raw), []byte("waitroom-command")); i >= 0 {
					t.Fatalf("%s: the client saw the command:\n%.2000q", what, a.raw)
				}
				ok := a.status >= 200 && a.status < 500
				if !ok {
					if !through.proxy {
						t.Fatalf("%s: answered %d:\n%.2000q", what, a.status, a.raw)
					}
					// An answer Go's client refuses: the same in another
					// header must do the same.
					other := c
					other.name = "X-Other"
					if b := rawGet(t, through.addr, path+pg.add(other), h...); b.status != a.status {
						t.Fatalf("%s: answered %d, and %d with the value in another header", what, a.status, b.status)
					}
				}
				want := 0
				if withPass && ok && c.acts() {
					want = 1
				}
				if got := rec.reached(e.queue) - before; got != want {
					t.Fatalf("%s: %d commands reached the admission, want %d", what, got, want)
				}
				if !through.proxy {
					heardMu.Lock()
					got := append([]string(nil), heard...)
					heardMu.Unlock()
					if wantHeard := c.form != formEarly; (len(got) == 1) != wantHeard {
						t.Fatalf("%s: the middleware heard %q", what, got)
					}
					if len(got) == 1 && !c.acts() && !nothingDone(got[0]) {
						t.Fatalf("%s: the middleware heard %q for a value that names no command", what, got)
					}
				}
				if !withPass {
					continue
				}
				ended := e.verify(pass).status != http.StatusOK
				if doneActs := want == 1 && textproto.TrimString(c.lines[0]) == gate.CommandDone; ended != doneActs {
					t.Fatalf("%s: the admission ended: %v, want %v", what, ended, doneActs)
				}
				if ended {
					pass = ""
				}
			}
		}
	})
}

// nothingDone reports whether the middleware heard of a command that did
// nothing ("queue command result").
func nothingDone(heard string) bool {
	for _, r := range []string{" ignored", " unknown", " no_pass"} {
		if strings.HasSuffix(heard, r) {
			return true
		}
	}
	return false
}

// reached is how many done and extend commands passed the pass check of
// queue q, whatever they did then.
func (c *counted) reached(q string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, v := range c.n {
		if strings.HasPrefix(k, q+" ") && !strings.HasPrefix(k, q+" other ") {
			n += v
		}
	}
	return n
}

// with is e reporting to t (a fuzz target may not use the F).
func (e *env) with(t testing.TB) *env {
	e2 := *e
	e2.t = t
	return &e2
}

// admittedPassFrom enters as a client at addr and returns the pass.
func (e *env) admittedPassFrom(addr string) string {
	e.t.Helper()
	tk, r := e.enterAnon("X-Forwarded-For", addr)
	if tk.Pass == "" {
		e.t.Fatalf("not admitted: %d %s", r.status, r.body)
	}
	return tk.Pass
}

type commandSeed struct {
	value          string
	form, spelling uint8
}

// commandSeeds are hand-picked values, then generated ones: words in any
// case, with spaces, tabs, commas, control bytes, look-alike characters,
// long values and several lines, each in one of the forms.
func commandSeeds() []commandSeed {
	seeds := []commandSeed{
		{"done", formHeader, 0}, {"extend", formHeader, 0}, {" done\t", formHeader, 1}, {"done", formQuiet, 2},
		{"Done", formHeader, 0}, {"EXTEND", formHeader, 0}, {"done,extend", formHeader, 0}, {"done, done", formHeader, 0},
		{"done\ndone", formHeader, 0}, {"done\nextend", formHeader, 1}, {"", formHeader, 0}, {"launch", formHeader, 0},
		{"done;q=1", formHeader, 0}, {"d\x00one", formHeader, 0}, {"done\x00", formHeader, 0}, {"done\x7f", formHeader, 0},
		{"done\r", formHeader, 0}, {"do\rne", formHeader, 0}, {"done\u00a0", formHeader, 0}, {"ｄｏｎｅ", formHeader, 0},
		{"done", formTrailer, 0}, {"done", formTrailer, 1}, {"extend", formTrailerPrefix, 0}, {"done", formTrailerPrefix, 2},
		{"done", formEarly, 0}, {"extend", formEarly, 1}, {strings.Repeat("done", 4096), formHeader, 0},
		{strings.Repeat(" ", 8000) + "done", formHeader, 0}, {"done\x01", formTrailer, 0},
	}
	rng := rand.New(rand.NewPCG(39, 39))
	words := []string{"done", "extend", "Done", "DONE", "eXtend", "launch", "", "done,", "done, extend", "extend;q=1", "done done", "none", "ext", "ｄone"}
	junk := []string{" ", "\t", ",", ";", "\x00", "\x01", "\x1f", "\x7f", "\r", "\v", "\f", "\u00a0", "\u200b", "é", "\xff"}
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	for range 160 {
		var lines []string
		for range 1 + rng.IntN(3)*rng.IntN(2) { // mostly one line
			v := pick(words)
			for range rng.IntN(3) {
				switch i := rng.IntN(len(v) + 1); rng.IntN(3) {
				case 0:
					v = pick(junk) + v
				case 1:
					v += pick(junk)
				default:
					v = v[:i] + pick(junk) + v[i:]
				}
			}
			if rng.IntN(20) == 0 {
				v += strings.Repeat(pick(words)+" ", 1000+rng.IntN(3000))
			}
			lines = append(lines, v)
		}
		seeds = append(seeds, commandSeed{strings.Join(lines, "\n"), uint8(rng.IntN(forms)), uint8(rng.IntN(len(commandSpellings)))})
	}
	return seeds
}
