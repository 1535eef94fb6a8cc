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
	"slices"
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
	if rng.IntN(2) == 0 {
		return GenerateUnder(rng, Bypass, n)
	}
	return GenerateUnder(rng, "/", n)
}

// GenerateUnder builds a path of up to n parts after start (a prefix
// under test, "/sale/concert-a", with or without its trailing slash).
func GenerateUnder(rng *rand.Rand, start string, n int) string {
	var b strings.Builder
	b.WriteString(start)
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
	return GetHost(addr, addr, target, header...)
}

// GetHost is Get with the Host header host, as sent ("Shop.Example.:80").
func GetHost(addr, host, target string, header ...string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: application/json\r\nConnection: close\r\n", target, host)
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
	Queue  string // X-Waitroom-Queue: the pass's queue, "" without a pass
	// Host is the host the client asked for: X-Forwarded-Host behind a
	// reverse proxy, else the Host header.
	Host string
}

// Recorder is an upstream that answers 200 and remembers what reached it.
type Recorder struct {
	mu   sync.Mutex
	seen []Seen
}

func (rec *Recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := Seen{Target: r.RequestURI, Sub: r.Header.Get("X-Waitroom-Sub"), Queue: r.Header.Get("X-Waitroom-Queue"), Host: r.Header.Get("X-Forwarded-Host")}
	if s.Host == "" {
		s.Host = r.Host
	}
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

// Room is a route of a site with several rooms, as the tests read it:
// requests for Host ("" any) and a path at or under Prefix need a pass for
// Queue.
type Room struct{ Host, Prefix, Queue string }

// RoomOf is the queue whose pass a request for host (a Host header as
// sent) and the path p (one resolution) needs among rooms, "" for none:
// read the plainest way, independently of the gate's own matching. Hosts
// compare in lower case without port and trailing dots; a prefix covers
// the path itself, with or without its trailing slash, and the paths
// below it, in lower case; a room naming the host comes before one for
// any host, then the longest prefix.
func RoomOf(rooms []Room, host, p string) string {
	host = strings.ToLower(host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimRight(host, ".")
	p = strings.ToLower(p)
	best, bestLen, bestHost := "", -1, false
	for _, r := range rooms {
		if r.Host != "" && r.Host != host {
			continue
		}
		pre := strings.TrimSuffix(strings.ToLower(r.Prefix), "/")
		if p != pre && !strings.HasPrefix(p, pre+"/") {
			continue
		}
		named := r.Host != ""
		if (named && !bestHost) || (named == bestHost && len(pre) > bestLen) {
			best, bestLen, bestHost = r.Queue, len(pre), named
		}
	}
	return best
}

// CheckRooms fails t for every request that reached the upstream in a
// room other than that of the pass it came with, in some server's
// resolution of its path (Resolutions): without a pass, every resolution
// must be in no room or under Bypass; with one, in no room or the pass's
// queue's. It returns how many reached it without a pass.
func (rec *Recorder) CheckRooms(t testing.TB, rooms []Room) (passless int) {
	t.Helper()
	for _, s := range rec.Seen() {
		if s.Sub == "" {
			passless++
		}
		p, _, _ := strings.Cut(s.Target, "?")
		for _, r := range Resolutions(p) {
			room := RoomOf(rooms, s.Host, r)
			if room == "" || room == s.Queue || (s.Sub == "" && Bypassed(r)) {
				continue
			}
			if s.Sub == "" {
				t.Errorf("%q on %q reached the upstream without a pass; resolved as %q it is in room %s", s.Target, s.Host, r, room)
			} else {
				t.Errorf("%q on %q reached the upstream with a pass for %s; resolved as %q it is in room %s", s.Target, s.Host, s.Queue, r, room)
			}
			break
		}
	}
	return passless
}

// TestRooms are the rooms the room tests use, with their queues named:
// concert's sale inside the sale, and the host shop.example as a whole
// (shop's); on other hosts, paths outside /sale/ are in no room.
func TestRooms(concert, sale, shop string) []Room {
	return []Room{
		{Prefix: "/sale/concert-a/", Queue: concert},
		{Prefix: "/sale/", Queue: sale},
		{Host: "shop.example", Prefix: "/", Queue: shop},
	}
}

// RoutesOf writes rooms as WAITROOM_GATE_ROUTES does.
func RoutesOf(rooms []Room) string {
	var b strings.Builder
	for i, r := range rooms {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(r.Host + r.Prefix + "=" + r.Queue)
	}
	return b.String()
}

// plainEnds end SendToRooms's paths half the time.
var plainEnds = []string{"", "seat", "seat/12", "x/", "?q=1", "Seat;v=2", "a.b/c"}

// SendToRooms sends n requests to addr with hosts and paths generated
// around TestRooms (case, ports, trailing dots, parameters, encodings,
// the prefixes without their trailing slash) and, on four in five, one of
// passes (queue -> pass) in a cookie (cookieName of its own queue or of
// another) or as a bearer token.
func SendToRooms(t testing.TB, rng *rand.Rand, addr string, passes map[string]string, cookieName func(queue string) string, n int) {
	t.Helper()
	hosts := []string{"shop.example", "SHOP.EXAMPLE", "Shop.Example.", "shop.example:8080", "shop.example.:443", "shop.example..", "other.example", "www.shop.example", "127.0.0.1", "[::1]:80"}
	starts := []string{"/", "/sale", "/sale/", "/SALE/", "/salex", "/sale/concert-a", "/sale/concert-a/", "/Sale/Concert-A", "/sale;x/concert-a/",
		"/sale/concert-a./", "/sale/concert-a%20/", "/sale/c%6fncert-a/", "/sale/concert-ab", "/sale/concert-a%2f", Bypass, Bypass + "../sale/concert-a/"}
	queues := make([]string, 0, len(passes))
	for q := range passes {
		queues = append(queues, q)
	}
	slices.Sort(queues) // map order is random; the run is not
	for range n {
		var hdr []string
		q := queues[rng.IntN(len(queues))]
		switch rng.IntN(5) {
		case 0, 1:
			hdr = []string{"Cookie", cookieName(q) + "=" + passes[q]}
		case 2:
			hdr = []string{"Cookie", cookieName(queues[rng.IntN(len(queues))]) + "=" + passes[q]}
		case 3:
			hdr = []string{"Authorization", "Bearer " + passes[q]}
		}
		// Half with plain endings, which reach the upstream more often
		// than the generated ones, most of which are refused as ambiguous.
		target := starts[rng.IntN(len(starts))] + plainEnds[rng.IntN(len(plainEnds))]
		if rng.IntN(2) == 0 {
			target = GenerateUnder(rng, starts[rng.IntN(len(starts))], 4)
		}
		if _, err := GetHost(addr, hosts[rng.IntN(len(hosts))], target, hdr...); err != nil {
			t.Fatal(err)
		}
	}
}
