// Package passuse keeps, in Redis and so for every replica, how entry
// passes are used at the gate: the one exchange of a hand-over link for a
// cookie, and the client addresses a pass comes from, so that a pass
// shared with others (posted, sold) is cancelled.
package passuse

import (
	"context"
	_ "embed"
	"errors"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/clientip"
	"github.com/waitroom/waitroom/internal/localmap"
	"github.com/waitroom/waitroom/internal/queue"
)

//go:embed seen.lua
var seenLua string

var seenScript = redis.NewScript(seenLua)

// Redis is the part of a go-redis client the package uses; a single node,
// Sentinel and Cluster client all satisfy it.
type Redis interface {
	redis.Scripter
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	SCard(ctx context.Context, key string) *redis.IntCmd
}

// DefaultMaxClients is how many client addresses (IPv6: /64 networks) one
// pass may be used from: a phone moving between Wi-Fi and mobile data is
// two or three; a pass posted for others is more.
const DefaultMaxClients = 3

// maxLocal bounds the passes whose addresses a replica remembers.
const maxLocal = 100000

// Uses is what passes were used for. Build it with New.
type Uses struct {
	rdb        Redis
	maxClients int
	timeout    time.Duration

	mu    sync.Mutex
	local map[passKey]*seen // the addresses this replica sent to Redis, per pass
}

// passKey names a pass in the local map: a struct, so that a lookup on
// every gated request builds no string.
type passKey struct{ queue, id string }

type seen struct {
	until   time.Time
	clients []netip.Prefix // network of each (clientip.Key, unformatted)
	shared  bool
}

// network is the address as Seen counts it: IPv4 whole, IPv6 by /64, as
// clientip.Key formats it for Redis.
func network(a netip.Addr) netip.Prefix {
	a = a.Unmap()
	if !a.IsValid() {
		return netip.Prefix{}
	}
	bits := a.BitLen()
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // cannot fail for a valid address; drops a zone
	return p
}

// New returns the uses kept in rdb, with at most maxClients addresses per
// pass (0: no limit, and no record of addresses); timeout bounds each
// Redis call.
func New(rdb Redis, maxClients int, timeout time.Duration) (*Uses, error) {
	if rdb == nil || maxClients < 0 || timeout <= 0 {
		return nil, errors.New("passuse: a client, a limit of clients per pass (0: none) and a positive timeout are required")
	}
	return &Uses{rdb: rdb, maxClients: maxClients, timeout: timeout, local: make(map[passKey]*seen)}, nil
}

// handOverKey is a pass's hand-over mark (STRING, until the pass's exp).
func handOverKey(q, id string) string { return queue.KeyPrefix(q) + "handover:" + id }

// clientsKey is the client addresses a pass was used from (SET).
func clientsKey(q, id string) string { return queue.KeyPrefix(q) + "passclients:" + id }

// Claim marks the pass id of queue q as handed over: true the first time,
// false ever after until the pass expires at until (gate.HandOvers).
func (u *Uses) Claim(ctx context.Context, q, id string, until time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	err := u.rdb.SetArgs(ctx, handOverKey(q, id), 1, redis.SetArgs{Mode: "NX", ExpireAt: until}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Seen records that the pass id of queue q was used from client and
// reports whether the pass is now shared: used from more than the
// allowed number of addresses (IPv6 counted by /64, as a subscriber's
// devices share one). Only an address this replica has not yet seen for
// the pass costs a Redis call.
func (u *Uses) Seen(ctx context.Context, q, id string, client netip.Addr, until time.Time) (shared bool, err error) {
	if u.maxClients == 0 {
		return false, nil
	}
	nw := network(client)
	key := passKey{q, id}
	u.mu.Lock()
	s := u.local[key]
	if s != nil && (s.shared || slices.Contains(s.clients, nw)) {
		shared := s.shared // read under the lock: another call may set it
		u.mu.Unlock()
		return shared, nil
	}
	u.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	n, err := seenScript.Run(ctx, u.rdb, []string{clientsKey(q, id)}, clientip.Key(client), until.UnixMilli()).Int64()
	if err != nil {
		return false, err
	}
	shared = n > int64(u.maxClients)

	u.mu.Lock()
	defer u.mu.Unlock()
	if s = u.local[key]; s == nil {
		u.makeRoom()
		s = &seen{until: until}
		u.local[key] = s
	}
	if !slices.Contains(s.clients, nw) && len(s.clients) <= u.maxClients {
		s.clients = append(s.clients, nw)
	}
	s.shared = s.shared || shared
	return s.shared, nil
}

// Shared reports whether the pass id of queue q was found shared, by any
// replica: what a gate asks of a pass it refuses as revoked, to tell its
// holder why.
func (u *Uses) Shared(ctx context.Context, q, id string) (bool, error) {
	if u.maxClients == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	n, err := u.rdb.SCard(ctx, clientsKey(q, id)).Result()
	return n > int64(u.maxClients), err
}

// makeRoom drops expired entries when the local map is full, then
// arbitrary ones (which costs them a Redis call more). u.mu is held.
func (u *Uses) makeRoom() {
	if len(u.local) < maxLocal {
		return
	}
	now := time.Now()
	localmap.Evict(u.local, maxLocal*9/10, func(s *seen) bool { return !now.Before(s.until) })
}
