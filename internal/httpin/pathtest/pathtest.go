// Package pathtest attacks a gate's path handling: it generates request
// paths in the forms that have slipped past path checks elsewhere, sends
// them as raw request lines, and records what reached the upstream, so a
// test can assert that nothing outside the bypassed prefix got there
// without a pass, however the upstream resolves what it was sent.
package pathtest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// pathParts are what the generated paths are made of: names, dot
// segments, every encoding of '.', '/', '\\' and '%' in both cases,
// double encodings, parameters, spaces, NULs and overlong UTF-8.
var pathParts = []string{
	"/", "/", "/", "static", "order", "Static", "ORDER", "x", ".", "..", "...",
	"%2e", "%2E", "%2f", "%2F", "%5c", "%5C", "%25", "%252e", "%252f", "%255c",
	"\\", ";", ";x", ";jsessionid=1", " ", "%20", "%00", "%41", "%3b", "%3B",
	"%c0%ae", "%c0%af", "%e2%80%a4", ".%2e", "%2e.", "..;", "./", "../", "//",
}

// Generate builds a path of up to n parts, starting with a slash and,
// often, with the bypass prefix.
func Generate(rng *rand.Rand, n int) string {
	var b strings.Builder
	if rng.IntN(2) == 0 {
		b.WriteString(Bypass)
	} else {
		b.WriteString("/")
	}
	for range rng.IntN(n) + 1 {
		b.WriteString(pathParts[rng.IntN(len(pathParts))])
	}
	return b.String()
}

// Resolutions are the ways servers behind a gate are known to resolve a
// path as sent: decode once and apply dot segments (RFC 3986, keeping
// empty segments; or merging them as Go and nginx do), decode twice,
// backslashes as slashes (IIS), parameters dropped (Tomcat), trailing
// dots and spaces dropped (Windows), and case folded.
func Resolutions(escaped string) []string {
	once := percentDecode(escaped)
	twice := percentDecode(once)
	var out []string
	for _, p := range []string{once, twice} {
		back := strings.ReplaceAll(p, "\\", "/")
		out = append(out,
			removeDotSegments(p),
			goClean(p),
			removeDotSegments(back),
			removeDotSegments(mapSegments(p, func(s string) string { s, _, _ = strings.Cut(s, ";"); return s })),
			removeDotSegments(mapSegments(back, func(s string) string {
				if s == "." || s == ".." {
					return s
				}
				if t := strings.TrimRight(s, ". "); t != "" || !strings.Contains(s, ".") {
					return t
				}
				return ".." // the most a run of dots can mean
			})),
			strings.ToLower(removeDotSegments(p)),
		)
	}
	return out
}

// percentDecode decodes every valid %XX, leaving the rest as it is.
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if c, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil && s[i+1] != '+' && s[i+1] != '-' {
				b.WriteByte(byte(c))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func mapSegments(p string, f func(string) string) string {
	segs := strings.Split(p, "/")
	for i := range segs {
		segs[i] = f(segs[i])
	}
	return strings.Join(segs, "/")
}

// removeDotSegments is RFC 3986 section 5.2.4 on a path.
func removeDotSegments(p string) string {
	var out []string
	segs := strings.Split(p, "/")[1:]
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case ".":
			if last {
				out = append(out, "")
			}
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			if last {
				out = append(out, "")
			}
		default:
			out = append(out, s)
		}
	}
	return "/" + strings.Join(out, "/")
}

func goClean(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// Bypass is the prefix the generated paths often start with, and that the
// gates under test let through without a pass.
const Bypass = "/static/"

// Bypassed reports whether p is under Bypass.
func Bypassed(p string) bool { return strings.HasPrefix(p, Bypass) }

// Get sends "GET target HTTP/1.1" as it is, with header pairs, to addr
// (host:port) on a fresh connection and returns the status (0 when the
// server closed the connection without an answer).
func Get(addr, target string, header ...string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n", target, addr)
	for i := 0; i+1 < len(header); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", header[i], header[i+1])
	}
	b.WriteString("\r\n")
	if _, err := c.Write([]byte(b.String())); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil // closed without an answer: nothing reached anyone
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Seen is one request that reached the upstream.
type Seen struct {
	Target string // the request target as the upstream received it
	Sub    string // X-Waitroom-Sub: the pass's holder, "" without a pass
}

// Recorder is an upstream that answers 200 and remembers what reached it.
type Recorder struct {
	mu   sync.Mutex
	seen []Seen
}

func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := Seen{Target: r.RequestURI, Sub: r.Header.Get("X-Waitroom-Sub")}
	rec.mu.Lock()
	rec.seen = append(rec.seen, s)
	rec.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

// Seen returns what reached the recorder so far.
func (rec *Recorder) Seen() []Seen {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Seen(nil), rec.seen...)
}

// Check fails t for every request that reached the upstream without a
// pass at a path that some server's resolution (Resolutions) puts outside
// Bypass, and returns how many passless requests reached it.
func (rec *Recorder) Check(t testing.TB) (passless int) {
	t.Helper()
	for _, s := range rec.Seen() {
		if s.Sub != "" {
			continue
		}
		passless++
		p, _, _ := strings.Cut(s.Target, "?")
		for _, r := range Resolutions(p) {
			if !Bypassed(r) {
				t.Errorf("%q reached the upstream without a pass; resolved as %q it is outside %s", s.Target, r, Bypass)
				break
			}
		}
	}
	return passless
}
