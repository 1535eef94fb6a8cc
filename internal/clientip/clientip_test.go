package clientip

import (
	"net/http"
	"testing"
)

func TestAddr(t *testing.T) {
	r, err := New([]string{"10.0.0.0/8", " 192.0.2.7 ", "", "2001:db8::/32"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"direct client", "203.0.113.9:5000", nil, "203.0.113.9"},
		{"an untrusted peer cannot claim an address", "203.0.113.9:5000", []string{"1.2.3.4"}, "203.0.113.9"},
		{"behind a trusted proxy", "10.1.2.3:80", []string{"198.51.100.4"}, "198.51.100.4"},
		{"read from the right: a spoofed first entry is ignored", "10.1.2.3:80", []string{"1.2.3.4, 198.51.100.4"}, "198.51.100.4"},
		{"two trusted hops", "10.1.2.3:80", []string{"198.51.100.4, 192.0.2.7"}, "198.51.100.4"},
		{"several header lines", "10.1.2.3:80", []string{"1.1.1.1", "198.51.100.4, 10.9.9.9"}, "198.51.100.4"},
		{"only trusted hops: the last one", "10.1.2.3:80", []string{"10.0.0.5"}, "10.0.0.5"},
		{"garbage stops the walk at the last trusted hop", "10.1.2.3:80", []string{"nonsense, 10.0.0.5"}, "10.0.0.5"},
		{"no header behind a trusted proxy: the proxy", "10.1.2.3:80", nil, "10.1.2.3"},
		{"IPv6 peer", "[2001:db8::1]:80", []string{"2001:db9::7"}, "2001:db9::7"},
		{"IPv4-mapped IPv6", "[::ffff:203.0.113.9]:80", nil, "203.0.113.9"},
	} {
		req, _ := http.NewRequest("GET", "/", nil)
		req.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			req.Header.Add("X-Forwarded-For", v)
		}
		if got := r.Addr(req).String(); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	none, _ := New(nil)
	req, _ := http.NewRequest("GET", "/", nil)
	req.RemoteAddr = "10.1.2.3:80"
	req.Header.Set("X-Forwarded-For", "1.2.3.4")
	if got := none.Addr(req).String(); got != "10.1.2.3" {
		t.Errorf("no trusted proxies: %s", got)
	}
	for _, bad := range []string{"10.0.0.0/33", "example.com", "1.2.3"} {
		if _, err := New([]string{bad}); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
}
