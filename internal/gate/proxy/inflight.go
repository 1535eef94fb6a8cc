package proxy

import (
	"net"
	"net/http"
	"net/netip"
	"sync"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
)

// inFlight counts the requests each admission, and each client address
// without a pass, has in the proxy on this replica, and refuses those
// past Limits.PerPass and PerClient. An entry lives only while requests
// are in flight, so the maps are bounded by the open connections.
type inFlight struct {
	perPass, perClient int

	mu      sync.Mutex
	passes  map[admission]int
	clients map[netip.Addr]int
}

// admission names what a pass admits: its queue and sub. Every pass
// issued for one admission (a status call signs a new one each time)
// shares its count.
type admission struct{ queue, sub string }

// slot is what a request took, to give back.
type slot struct {
	pass   admission
	client netip.Addr
	byPass bool
}

func newInFlight(l Limits) *inFlight {
	return &inFlight{perPass: l.PerPass, perClient: l.PerClient, passes: map[admission]int{}, clients: map[netip.Addr]int{}}
}

// take counts r in, by its pass's admission if the gate let it in with
// one, else by its client's address; reason is a Cut constant when it is
// refused.
func (f *inFlight) take(r *http.Request) (s slot, reason string) {
	if c, ok := gate.FromContext(r.Context()); ok {
		s = slot{pass: admission{c.Queue, c.Subject}, byPass: true}
	} else {
		s = slot{client: clientKey(r)}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.byPass {
		if f.passes[s.pass] >= f.perPass {
			return s, CutPassBusy
		}
		f.passes[s.pass]++
		return s, ""
	}
	if f.clients[s.client] >= f.perClient {
		return s, CutClientBusy
	}
	f.clients[s.client]++
	return s, ""
}

// give returns s's count.
func (f *inFlight) give(s slot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s.byPass {
		if f.passes[s.pass]--; f.passes[s.pass] <= 0 {
			delete(f.passes, s.pass)
		}
		return
	}
	if f.clients[s.client]--; f.clients[s.client] <= 0 {
		delete(f.clients, s.client)
	}
}

// clientKey is r's client as the per-client cap counts it: the address
// the trusted-proxy rules give (clientip), else the peer's; an IPv6
// address as its /64, the block one subscriber gets.
func clientKey(r *http.Request) netip.Addr {
	a, ok := clientip.FromContext(r.Context())
	if !ok {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			host = r.RemoteAddr
		}
		a, _ = netip.ParseAddr(host)
	}
	a = a.Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return a
}
