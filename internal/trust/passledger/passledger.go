// Package passledger keeps, in Redis and so for every replica, how entry
// passes are used at the gate: the one exchange of a pass link for a
// cookie, and the client networks an admission's passes come from, so
// that an admission shared with others (its passes posted, sold) is
// cancelled.
//
// The sharing count is per admission, not per pass: every status call of
// an admitted place signs a new pass with a new jti, so a count per jti
// let one place open the site for MaxClients networks per status call.
// An admission is what every pass issued for it has in
// common: its queue (aud), member (sub) and start (adm).
package passledger

import (
	"context"
	_ "embed"
	"errors"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/trust/pass"
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

// DefaultMaxClients is how many client addresses (IPv6: /64 networks) the
// passes of one admission may be used from: a phone moving between Wi-Fi
// and mobile data is two or three; a pass posted for others is more.
const DefaultMaxClients = 3

// maxLocal bounds the admissions whose networks a replica remembers: past
// it, the one seen least recently is forgotten, which costs it a Redis
// call more if it comes again (an admission found shared is found so
// again there), never a wrong answer. An admission whose passes expired is
// seen no more, so it is the first to go.
const maxLocal = 100000

// Uses is what passes were used for. Build it with New.
type Uses struct {
	rdb        Redis
	maxClients int
	timeout    time.Duration

	mu    sync.Mutex
	local *simplelru.LRU[Admission, *seen] // the networks this replica sent to Redis, per admission
}

// Admission names one admission, the same for every pass issued for it
// whatever its jti: a struct, so that a lookup of the local map on every
// gated request builds no string.
type Admission struct {
	Queue  string // aud
	Member string // sub
	Start  int64  // adm: the admission's start, Unix ms, as the queue dated it
}

// AdmissionOf is the admission a verified pass was issued for.
func AdmissionOf(c pass.Claims) Admission {
	return Admission{Queue: c.Queue, Member: c.Subject, Start: c.AdmittedAt.UnixMilli()}
}

type seen struct {
	clients []netip.Prefix // network of each (clientip.Key, unformatted)
	shared  bool
}

// network is the address as Seen counts it: IPv4 whole, IPv6 by /64, as
// clientip.Key formats it for Redis.
func network(a netip.Addr) netip.Prefix {
	// A 6to4 or Teredo address is the IPv4 host it carries, as for every
	// per-client budget (clientip.Embedded).
	a = clientip.Embedded(a)
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

// New returns the uses kept in rdb, with at most maxClients networks per
// admission (0: no limit, and no record of networks); timeout bounds each
// Redis call.
func New(rdb Redis, maxClients int, timeout time.Duration) (*Uses, error) {
	if rdb == nil || maxClients < 0 || timeout <= 0 {
		return nil, errors.New("passledger: a client, a limit of clients per admission (0: none) and a positive timeout are required")
	}
	local, err := simplelru.NewLRU[Admission, *seen](maxLocal, nil)
	if err != nil {
		return nil, err
	}
	return &Uses{rdb: rdb, maxClients: maxClients, timeout: timeout, local: local}, nil
}

// clientsKey is the client networks an admission's passes were used from
// (SET, until the latest exp of its passes): the start first, which has
// no ':', so no two admissions share a key whatever their member ids.
// (The per-pass sets of old, "passclients:{jti}", are no longer written
// and expire with their passes.)
func clientsKey(a Admission) string {
	return rediskeys.AdmissionClients(a.Queue, strconv.FormatInt(a.Start, 10), a.Member)
}

// Claim marks the pass id of queue q as handed over: true the first time,
// false ever after until the pass expires at until (gate.PassLinks). A
// pass-link exchange stays single-use per pass, not per admission: the holder's
// browser is handed a new pass each time it reloads the waiting page, and
// must still get in. What bounds an admission's pass-link exchanges is Seen: the
// gate checks a handed-over pass, which counts the network it comes from.
func (u *Uses) Claim(ctx context.Context, q, id string, until time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	err := u.rdb.SetArgs(ctx, rediskeys.PassLinkUsed(q, id), 1, redis.SetArgs{Mode: "NX", ExpireAt: until}).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}

// Seen records that the pass c was used from client and reports whether
// its admission is now shared: its passes, whichever of them, used from
// more than the allowed number of networks (IPv6 counted by /64, as a
// subscriber's devices share one). Only a network this replica has not
// yet seen for the admission costs a Redis call.
func (u *Uses) Seen(ctx context.Context, c pass.Claims, client netip.Addr) (shared bool, err error) {
	if u.maxClients == 0 {
		return false, nil
	}
	nw := network(client)
	key := AdmissionOf(c)
	u.mu.Lock()
	s, _ := u.local.Get(key)
	if s != nil && (s.shared || slices.Contains(s.clients, nw)) {
		shared := s.shared // read under the lock: another call may set it
		u.mu.Unlock()
		return shared, nil
	}
	u.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	n, err := seenScript.Run(ctx, u.rdb, []string{clientsKey(key)}, clientip.Key(client), c.Expires.UnixMilli(), u.maxClients).Int64()
	if err != nil {
		return false, err
	}
	shared = n > int64(u.maxClients)

	u.mu.Lock()
	defer u.mu.Unlock()
	if s, _ = u.local.Get(key); s == nil {
		s = &seen{}
		u.local.Add(key, s)
	}
	if !slices.Contains(s.clients, nw) && len(s.clients) <= u.maxClients {
		s.clients = append(s.clients, nw)
	}
	s.shared = s.shared || shared
	return s.shared, nil
}

// Shared reports whether the admission of the pass c was found shared, by
// any replica: what a gate asks of a pass it refuses as revoked, to tell
// its holder why.
func (u *Uses) Shared(ctx context.Context, c pass.Claims) (bool, error) {
	if u.maxClients == 0 {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	n, err := u.rdb.SCard(ctx, clientsKey(AdmissionOf(c))).Result()
	return n > int64(u.maxClients), err
}
