// Package safeurl holds the rules for the requests waitroom makes on the
// operator's behalf to a URL it was given (webhooks, the origin probe):
// which addresses they may reach, checked on the address actually
// dialled (after DNS, so a name that resolves somewhere refused is
// refused too), no redirects followed, no proxy from the environment.
package safeurl

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Policy says which addresses a request may reach. Link-local addresses
// (cloud metadata at 169.254.169.254, fe80::/10), the unspecified
// address, multicast and broadcast are never a site's; loopback and the
// private ranges are refused unless allowed.
type Policy struct {
	// AllowLoopback lets 127.0.0.0/8 and ::1 (and the name localhost)
	// through.
	AllowLoopback bool
	// AllowPrivate lets the private ranges through: 10/8, 172.16/12,
	// 192.168/16, 100.64/10 (carrier NAT), fc00::/7.
	AllowPrivate bool
}

// cgnat is the shared address space of carrier NAT (RFC 6598).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// nat64 and sixToFour carry an IPv4 address inside an IPv6 one (RFC 6052,
// RFC 3056), so a gateway may dial the IPv4 address they embed.
var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// Check returns why a may not be reached under p, or nil.
func (p Policy) Check(a netip.Addr) error {
	a = embedded(a.Unmap().WithZone(""))
	switch {
	case !a.IsValid():
		return fmt.Errorf("safeurl: not an address")
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsUnspecified() || a.IsMulticast() ||
		a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || (a.Is4() && a.As4()[0] == 0):
		return fmt.Errorf("safeurl: %s is never a site's address", a)
	case a.IsLoopback() && !p.AllowLoopback:
		return fmt.Errorf("safeurl: %s is a loopback address", a)
	case (a.IsPrivate() || cgnat.Contains(a)) && !p.AllowPrivate:
		return fmt.Errorf("safeurl: %s is a private address", a)
	}
	return nil
}

// embedded returns the IPv4 address an IPv4-compatible (::a.b.c.d),
// NAT64 or 6to4 address carries, else a.
func embedded(a netip.Addr) netip.Addr {
	if !a.Is6() {
		return a
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	case [12]byte(b[:12]) == [12]byte{} && !a.IsLoopback() && !a.IsUnspecified():
		return netip.AddrFrom4([4]byte(b[12:16]))
	}
	return a
}

// CheckHost checks a URL's host (url.URL.Hostname) before any DNS: an
// address literal must be one p allows, written the standard way (dotted
// decimal or IPv6); the other ways an IPv4 address can be written
// (2852039166, 0251.0376.0251.0376, 0xa9.0xfe.0xa9.0xfe, 169.254.43518)
// are refused outright, since resolvers read them differently. The name
// localhost and its subdomains are loopback. Any other name is checked
// when dialled (Control).
func (p Policy) CheckHost(host string) error {
	if host == "" {
		return fmt.Errorf("safeurl: no host")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.Check(a)
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if numericLabel(name[strings.LastIndexByte(name, '.')+1:]) {
		return fmt.Errorf("safeurl: %q: write an IP address in dotted decimal", host)
	}
	if (name == "localhost" || strings.HasSuffix(name, ".localhost")) && !p.AllowLoopback {
		return fmt.Errorf("safeurl: %q is a loopback name", host)
	}
	return nil
}

// numericLabel reports whether a host's last label is a number (decimal,
// octal or 0x hex), which makes the host an IPv4 address to a URL parser
// (WHATWG URL's "ends in a number") and to inet_aton.
func numericLabel(s string) bool {
	if s == "" {
		return false
	}
	if strings.HasPrefix(s, "0x") {
		_, err := strconv.ParseUint(s[2:]+"0", 16, 64) // "0x" alone is a number too
		return err == nil
	}
	return strings.Trim(s, "0123456789") == ""
}

// Control refuses, at connect time, an address p does not allow: the
// check that DNS cannot get around (a name resolving to 169.254.169.254,
// or rebinding to it after a check).
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return err
	}
	if err := p.Check(ap.Addr()); err != nil {
		return fmt.Errorf("safeurl: refusing to dial %s: %w", address, err)
	}
	return nil
}

// NewClient returns a client for requests on the operator's behalf:
// every request bounded by timeout, no redirects followed (a 3xx is the
// answer), no proxy (it would dial for us, unchecked), every dial checked
// by p. maxIdle bounds the idle connections kept per host.
func NewClient(timeout time.Duration, p Policy, maxIdle int) *http.Client {
	d := &net.Dialer{Timeout: min(timeout, 5*time.Second), Control: p.Control}
	t := &http.Transport{
		Proxy:                 nil,
		DialContext:           d.DialContext,
		TLSHandshakeTimeout:   min(timeout, 5*time.Second),
		ResponseHeaderTimeout: timeout,
		MaxIdleConnsPerHost:   maxIdle,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	return &http.Client{
		Transport: t,
		Timeout:   timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// MaxURLBytes bounds a URL checked by CheckURL.
const MaxURLBytes = 2048

// CheckURL checks a URL a request on the operator's behalf will poll (the
// origin probe): absolute http or https, with a host p allows
// (CheckHost), no user info, at most MaxURLBytes.
func (p Policy) CheckURL(raw string) error {
	if len(raw) > MaxURLBytes {
		return fmt.Errorf("safeurl: longer than %d bytes", MaxURLBytes)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" || u.User != nil {
		return fmt.Errorf("safeurl: not an absolute http(s) URL without user info")
	}
	return p.CheckHost(u.Hostname())
}
