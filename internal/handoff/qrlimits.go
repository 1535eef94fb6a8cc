package handoff

import (
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/waitroom/waitroom/internal/localmap"
)

// The QR codes' limits (issue 26.6). They are this process's, not shared
// through Redis: what they protect is this process's CPU (a picture costs
// milliseconds to draw) and they must cost no Redis call, so that a flood
// of them cannot take the Redis connections other requests need. Behind
// N replicas a client gets N times as many in all, each replica the same
// bounded share.
const (
	// QRPerPlace pictures a place may ask for at once, and one more each
	// QRPlaceEvery: a page asks for one per hand-over it shows.
	QRPerPlace   = 5
	QRPlaceEvery = 5 * time.Second
	// QRPerClient pictures a client address (clientip.Key) may ask for at
	// once, and one more each QRClientEvery: several people behind one
	// address (an office, a carrier's NAT) share it.
	QRPerClient   = 30
	QRClientEvery = 500 * time.Millisecond
	// MaxQRLimited bounds the places and the clients whose limits are
	// kept (each); past it, those whose bucket has filled up again go
	// first, then any.
	MaxQRLimited = 1 << 16
	// MaxCachedQRs bounds the pictures kept (qrcache.go): at most a few
	// kB each.
	MaxCachedQRs = 4096
)

// qrLimits are token buckets per place and per client.
type qrLimits struct {
	mu      sync.Mutex
	places  keyedLimits
	clients keyedLimits
}

func newQRLimits() *qrLimits {
	return &qrLimits{
		places:  keyedLimits{m: map[string]*rate.Limiter{}, every: QRPlaceEvery, burst: QRPerPlace},
		clients: keyedLimits{m: map[string]*rate.Limiter{}, every: QRClientEvery, burst: QRPerClient},
	}
}

// take takes one picture from member's place in q and from client ("":
// no client limit), or neither: then it returns how long until both
// have one again.
func (l *qrLimits) take(q, member, client string) time.Duration {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	place := l.places.reserve(q+"\x00"+member, now)
	if wait := place.DelayFrom(now); wait > 0 {
		place.CancelAt(now)
		return wait
	}
	if client == "" {
		return 0
	}
	c := l.clients.reserve(client, now)
	if wait := c.DelayFrom(now); wait > 0 {
		c.CancelAt(now)
		place.CancelAt(now)
		return wait
	}
	return 0
}

// keyedLimits is one token bucket per key, at most MaxQRLimited of them.
type keyedLimits struct {
	m     map[string]*rate.Limiter
	every time.Duration
	burst int
}

func (k *keyedLimits) reserve(key string, now time.Time) *rate.Reservation {
	lim, ok := k.m[key]
	if !ok {
		if len(k.m) >= MaxQRLimited {
			// A full bucket is what a new one would be: dropping it
			// forgets nothing.
			localmap.Evict(k.m, MaxQRLimited*3/4, func(l *rate.Limiter) bool { return l.TokensAt(now) >= float64(k.burst) })
		}
		lim = rate.NewLimiter(rate.Every(k.every), k.burst)
		k.m[key] = lim
	}
	return lim.ReserveN(now, 1)
}
