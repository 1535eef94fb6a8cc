package handoff

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// The QR codes' limits. They are this process's, not shared
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
	// kept (each); past it, the one that asked least recently goes: its
	// bucket has filled up again unless MaxQRLimited others asked within
	// a few seconds, and a full bucket is what a new one would be.
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
		places:  keyedLimits{m: newLRU[*rate.Limiter](MaxQRLimited), every: QRPlaceEvery, burst: QRPerPlace},
		clients: keyedLimits{m: newLRU[*rate.Limiter](MaxQRLimited), every: QRClientEvery, burst: QRPerClient},
	}
}

// newLRU returns an LRU of at most size entries, size one of the
// package's constants: simplelru refuses only a size below 1.
func newLRU[V any](size int) *simplelru.LRU[string, V] {
	l, err := simplelru.NewLRU[string, V](size, nil)
	if err != nil {
		panic(err) // a constant below 1: a programming error every test meets
	}
	return l
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
	m     *simplelru.LRU[string, *rate.Limiter]
	every time.Duration
	burst int
}

func (k *keyedLimits) reserve(key string, now time.Time) *rate.Reservation {
	lim, ok := k.m.Get(key)
	if !ok {
		lim = rate.NewLimiter(rate.Every(k.every), k.burst)
		k.m.Add(key, lim)
	}
	return lim.ReserveN(now, 1)
}
