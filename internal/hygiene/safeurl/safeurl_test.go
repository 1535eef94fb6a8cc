package safeurl

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"
)

// refused are URLs the default policy refuses before any DNS: cloud
// metadata and loopback and private targets in the ways they are written.
var refused = []string{
	"http://169.254.169.254/latest/meta-data/",
	"http://169.254.169.254./",
	"http://2852039166/",
	"http://0xa9fea9fe/",
	"http://0XA9FEA9FE/",
	"http://0251.0376.0251.0376/",
	"http://0xa9.0xfe.0xa9.0xfe/",
	"http://169.254.43518/",
	"http://169.16689662/",
	"http://[::ffff:169.254.169.254]/",
	"http://[::ffff:a9fe:a9fe]/",
	"http://[0:0:0:0:0:ffff:a9fe:a9fe]/",
	"http://[64:ff9b::a9fe:a9fe]/",
	"http://[2002:a9fe:a9fe::1]/",
	"http://[::169.254.169.254]/",
	"http://[fe80::1%25eth0]/",
	"http://127.0.0.1:8081/healthz",
	"http://127.1/",
	"http://0177.0.0.1/",
	"http://[::1]/",
	"http://localhost/",
	"http://LOCALHOST./",
	"http://api.localhost/",
	"http://10.0.0.7/",
	"http://172.16.3.4/",
	"http://192.168.1.1/",
	"http://100.64.0.1/",
	"http://[fd00::1]/",
	"http://0.0.0.0/",
	"http://0/",
	"http://[::]/",
	"http://224.0.0.1/",
	"http://255.255.255.255/",
	"http://user:pw@orders.example/",
	"ftp://orders.example/",
	"/healthz",
}

// allowed are URLs the default policy lets through to the dial check.
var allowed = []string{
	"https://orders.example/healthz",
	"http://orders.internal:8081/healthz",
	"http://93.184.216.34/",
	"http://[2606:2800:220:1::1]/",
	"http://1.2.3.4.nip.example/",
	"http://v1.example/",
}

func TestCheckURL(t *testing.T) {
	var p Policy
	for _, u := range refused {
		if p.CheckURL(u) == nil {
			t.Errorf("accepted %s", u)
		}
	}
	for _, u := range allowed {
		if err := p.CheckURL(u); err != nil {
			t.Errorf("refused %s: %v", u, err)
		}
	}
	// Allowed private: loopback and private ranges pass, link-local never.
	open := Policy{AllowLoopback: true, AllowPrivate: true}
	for _, u := range []string{"http://127.0.0.1:8081/healthz", "http://localhost/", "http://10.0.0.7/", "http://[fd00::1]/", "http://[::1]/"} {
		if err := open.CheckURL(u); err != nil {
			t.Errorf("allowed private, refused %s: %v", u, err)
		}
	}
	for _, u := range []string{"http://169.254.169.254/", "http://[::ffff:169.254.169.254]/", "http://[fe80::1]/", "http://0.0.0.0/", "http://2852039166/"} {
		if open.CheckURL(u) == nil {
			t.Errorf("allowed private, accepted %s", u)
		}
	}
}

// forms writes an IPv4 address in one of the ways URL parsers and
// resolvers read as it.
func forms(rng *rand.Rand, a [4]byte) string {
	n := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	part := func(v uint32) string {
		switch rng.IntN(3) {
		case 0:
			return fmt.Sprint(v)
		case 1:
			return fmt.Sprintf("0%o", v)
		}
		return fmt.Sprintf("0x%x", v)
	}
	switch rng.IntN(9) {
	case 0:
		return fmt.Sprintf("%d.%d.%d.%d", a[0], a[1], a[2], a[3])
	case 1:
		return fmt.Sprint(n)
	case 2:
		return fmt.Sprintf("0x%X", n)
	case 3:
		return part(uint32(a[0])) + "." + part(uint32(a[1])) + "." + part(uint32(a[2])) + "." + part(uint32(a[3]))
	case 4:
		return fmt.Sprintf("%d.%d.%d", a[0], a[1], uint32(a[2])<<8|uint32(a[3]))
	case 5:
		return fmt.Sprintf("%d.%d", a[0], n&0xffffff)
	case 6:
		return fmt.Sprintf("[::ffff:%d.%d.%d.%d]", a[0], a[1], a[2], a[3])
	case 7:
		return fmt.Sprintf("[::ffff:%x:%x]", n>>16, n&0xffff)
	}
	return fmt.Sprintf("[0:0:0:0:0:FFFF:%X:%X]", n>>16, n&0xffff)
}

// TestGeneratedForms: over generated addresses in
// the refused ranges (fixed seed), each written in a generated form
// (dotted, decimal, octal, hex, short, IPv4-mapped IPv6), with or
// without a trailing dot, port or path, the default policy refuses the
// URL; and what it accepts never parses to such an address.
func TestGeneratedForms(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 13))
	ranges := []netip.Prefix{
		netip.MustParsePrefix("169.254.0.0/16"), netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("172.16.0.0/12"), netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("100.64.0.0/10"),
		netip.MustParsePrefix("0.0.0.0/8"),
	}
	var p Policy
	for i := range 5000 {
		pr := ranges[rng.IntN(len(ranges))]
		a := pr.Addr().As4()
		bits := 32 - pr.Bits()
		v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | rng.Uint32()&(1<<bits-1)
		a = [4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
		host := forms(rng, a)
		if rng.IntN(4) == 0 && !strings.HasPrefix(host, "[") {
			host += "."
		}
		if rng.IntN(2) == 0 {
			host += fmt.Sprintf(":%d", 1+rng.IntN(65535))
		}
		raw := []string{"http://", "https://", "HTTP://"}[rng.IntN(3)] + host + []string{"", "/", "/healthz?x=1"}[rng.IntN(3)]
		if p.CheckURL(raw) == nil {
			t.Fatalf("case %d: accepted %s (%v)", i, raw, netip.AddrFrom4(a))
		}
	}
}

// FuzzCheckURL: whatever the default policy accepts is an absolute
// http(s) URL whose host is a name that does not end in a number and is
// not localhost, or an address literal in no refused range.
func FuzzCheckURL(f *testing.F) {
	for _, u := range append(refused, allowed...) {
		f.Add(u)
	}
	var p Policy
	f.Fuzz(func(t *testing.T, raw string) {
		if p.CheckURL(raw) != nil {
			return
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			t.Fatalf("accepted %q", raw)
		}
		host := u.Hostname()
		if a, err := netip.ParseAddr(host); err == nil {
			if p.Check(a) != nil {
				t.Fatalf("accepted %q: %s", raw, a)
			}
			return
		}
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		if name == "localhost" || strings.HasSuffix(name, ".localhost") || numericLabel(name[strings.LastIndexByte(name, '.')+1:]) {
			t.Fatalf("accepted %q", raw)
		}
	})
}

// TestDialChecked: the client checks the address it dials, after DNS: a
// name that resolves to loopback (localhost, from the hosts file) is
// refused at connect time under the default policy, reached when
// loopback is allowed; a redirect is the answer, not followed.
func TestDialChecked(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Path == "/moved" {
			http.Redirect(w, r, "/target", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	byName := "http://localhost:" + port
	res, err := NewClient(time.Second, Policy{}, 1).Get(byName + "/moved")
	if err == nil {
		res.Body.Close()
		t.Fatal("reached a loopback address by name under the default policy")
	}
	if !strings.Contains(err.Error(), "refusing to dial") {
		t.Fatalf("%v, want a refusal at dial time", err)
	}
	if hits != 0 {
		t.Fatalf("%d requests reached the server", hits)
	}
	res, err = NewClient(time.Second, Policy{AllowLoopback: true}, 1).Get(byName + "/moved")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusFound || hits != 1 {
		t.Fatalf("status %d after %d requests, want the 302 itself, not followed", res.StatusCode, hits)
	}
}
