// Package adminsession keeps the back office's sign-ins of people: the
// OpenID Connect code flow with the company's identity provider
// (signin.go), and the server-side sessions it starts (this file), kept
// in Redis so that every replica knows them and an admin can end them.
//
// A session's id is 256 random bits, the value of the __Host-wr_admin
// cookie. It ends after an idle time without use (30 minutes by
// default) and at the latest an absolute time after sign-in (12 hours),
// both on the Redis clock. Like API tokens, a session found live is
// trusted by a replica for at most CacheFor (1 s) without asking Redis
// again; a signed-out or revoked one is refused everywhere within it.
package adminsession

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

const (
	// CacheFor is how long a replica trusts a session it found live.
	CacheFor = time.Second
	// DefaultIdle and DefaultAbsolute are the sessions' lifetimes unless
	// configured (WAITROOM_ADMIN_SESSION_IDLE, _MAX).
	DefaultIdle     = 30 * time.Minute
	DefaultAbsolute = 12 * time.Hour
	// idBytes is a session id's randomness; its text is 43 characters.
	idBytes   = 32
	idLen     = 43
	cacheSize = 1024
)

//go:embed scripts/start.lua
var startLua string

//go:embed scripts/touch.lua
var touchLua string

//go:embed scripts/end.lua
var endLua string

//go:embed scripts/claim.lua
var claimLua string

// ErrNoSession: the person has no live session to end. An answer of
// "ended 0" read like a success to an admin who mistyped a name.
var ErrNoSession = errors.New("adminsession: the person has no live session")

var (
	startScript = redis.NewScript(startLua)
	touchScript = redis.NewScript(touchLua)
	endScript   = redis.NewScript(endLua)
)

// Person is who signs in: their name (e-mail, else subject) and what
// their groups grant.
type Person struct {
	Name    string            `json:"name"`
	Subject string            `json:"sub"`
	Grants  []adminauth.Grant `json:"grants"`
}

// Principal is who a session of p stands for.
func (p Person) principal(id string) adminauth.Principal {
	return adminauth.Principal{Actor: actor.Actor{Kind: actor.KindOIDC, Name: p.Name}, Grants: p.Grants, Session: id}
}

// Redis is the part of a go-redis client the sessions use.
type Redis interface {
	redis.Scripter
	SMembers(ctx context.Context, key string) *redis.StringSliceCmd
}

// Sessions starts, finds and ends sessions.
type Sessions struct {
	rdb            Redis
	idle, absolute time.Duration
	now            func() time.Time
	cache          *lru.Cache[string, cached]
	// ended are the sessions this replica ended within CacheFor: a find
	// that began before must not trust them again.
	ended *lru.Cache[string, time.Time]
}

type cached struct {
	p     Person
	until time.Time
}

// Options are the sessions' lifetimes (zero: the defaults) and the clock
// the cache's trust is measured on (nil: time.Now; tests step one).
type Options struct {
	Idle, Absolute time.Duration
	Now            func() time.Time
}

// New returns the sessions kept in rdb.
func New(rdb Redis, o Options) (*Sessions, error) {
	if rdb == nil {
		return nil, errors.New("adminsession: no Redis client")
	}
	s := &Sessions{rdb: rdb, idle: o.Idle, absolute: o.Absolute, now: o.Now}
	if s.idle == 0 {
		s.idle = DefaultIdle
	}
	if s.absolute == 0 {
		s.absolute = DefaultAbsolute
	}
	if s.idle < 0 || s.absolute < 0 {
		return nil, errors.New("adminsession: lifetimes must be positive")
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.cache, _ = lru.New[string, cached](cacheSize) // positive sizes cannot fail
	s.ended, _ = lru.New[string, time.Time](cacheSize)
	return s, nil
}

// Absolute is the longest a session lasts.
func (s *Sessions) Absolute() time.Duration { return s.absolute }

// Start begins a session of p and returns its id.
func (s *Sessions) Start(ctx context.Context, p Person) (string, error) {
	b := make([]byte, idBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b)
	rec, _ := json.Marshal(p) // plain fields: cannot fail
	err := startScript.Run(ctx, s.rdb, []string{rediskeys.Session(id), rediskeys.PersonSessions(p.Name)},
		id, rec, p.Name, s.idle.Milliseconds(), s.absolute.Milliseconds()).Err()
	if err != nil {
		return "", fmt.Errorf("adminsession: start: %w", err)
	}
	return id, nil
}

// WellFormed reports whether id reads as a session id at all.
func WellFormed(id string) bool {
	if len(id) != idLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(id)
	return err == nil
}

// Find returns who session id stands for; false when it is not live.
// Found in Redis, its idle timeout is renewed, and this replica trusts
// it for CacheFor.
func (s *Sessions) Find(ctx context.Context, id string) (adminauth.Principal, bool, error) {
	if !WellFormed(id) {
		return adminauth.Principal{}, false, nil
	}
	if c, ok := s.cache.Get(id); ok && s.now().Before(c.until) {
		return c.p.principal(id), true, nil
	}
	v, err := touchScript.Run(ctx, s.rdb, []string{rediskeys.Session(id)}, s.idle.Milliseconds()).Slice()
	if err != nil {
		return adminauth.Principal{}, false, fmt.Errorf("adminsession: find: %w", err)
	}
	raw, _ := v[0].(string)
	left, _ := v[1].(int64)
	var p Person
	if raw == "" || json.Unmarshal([]byte(raw), &p) != nil {
		s.cache.Remove(id)
		return adminauth.Principal{}, false, nil
	}
	if until, ok := s.ended.Get(id); ok && s.now().Before(until) {
		return adminauth.Principal{}, false, nil // read before this replica ended it
	}
	s.cache.Add(id, cached{p: p, until: s.now().Add(min(CacheFor, time.Duration(left)*time.Millisecond))})
	return p.principal(id), true, nil
}

// End ends session id of person (signing out).
func (s *Sessions) End(ctx context.Context, person, id string) error {
	s.forget(id)
	err := endScript.Run(ctx, s.rdb, []string{rediskeys.PersonSessions(person), rediskeys.Session(id)}, id).Err()
	if err != nil {
		return fmt.Errorf("adminsession: end: %w", err)
	}
	return nil
}

// forget drops id from this replica's trust, and keeps a find under way
// from trusting it again.
func (s *Sessions) forget(id string) {
	s.ended.Add(id, s.now().Add(CacheFor))
	s.cache.Remove(id)
}

// EndPerson ends every session of person and returns how many were live;
// ErrNoSession when none was. Other replicas refuse them within CacheFor.
func (s *Sessions) EndPerson(ctx context.Context, person string) (int, error) {
	ids, err := s.rdb.SMembers(ctx, rediskeys.PersonSessions(person)).Result()
	if err != nil {
		return 0, fmt.Errorf("adminsession: end person: %w", err)
	}
	keys := []string{rediskeys.PersonSessions(person)}
	argv := make([]any, 0, len(ids))
	for _, id := range ids {
		s.forget(id)
		keys = append(keys, rediskeys.Session(id))
		argv = append(argv, id)
	}
	if len(ids) == 0 {
		return 0, ErrNoSession
	}
	n, err := endScript.Run(ctx, s.rdb, keys, argv...).Int()
	if err != nil {
		return 0, fmt.Errorf("adminsession: end person: %w", err)
	}
	if n == 0 {
		// Only ids of sessions that expired on their own: nothing ended.
		return 0, ErrNoSession
	}
	return n, nil
}
