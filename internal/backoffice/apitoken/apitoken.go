// Package apitoken keeps the admin API's tokens for scripts and
// dashboards: a name, a grant (a role on some queues) and an expiry each,
// created and revoked by an admin, kept in Redis for every replica.
//
// A token reads "wrt_<id>_<secret>": the prefix lets secret scanners find
// a leaked one, the id makes its lookup one read, and the secret is 256
// random bits. Redis holds only the secret's keyed hash (HMAC-SHA-256
// under a key derived from WAITROOM_SECRET): a fast hash is right for a
// secret that cannot be guessed, and the key keeps a copy of Redis from
// being enough to check one.
//
// Verify remembers a token it found valid for at most CacheFor (1 s):
// within it a valid token costs no Redis command at all, and a revoked
// one is refused by every replica within it. Every other presentation (an
// unknown id, a wrong secret, a token not seen for a second) is judged by
// the caller's lockout, so guessing is counted as with any admin
// credential.
package apitoken

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

const (
	// Prefix begins every token.
	Prefix = "wrt_"
	// CacheFor is how long a replica trusts a token it found valid: a
	// revoked token is refused everywhere within it.
	CacheFor = time.Second
	// MaxTokens is the most live tokens.
	MaxTokens = 1000
	// MaxLifetime is the longest expires_in a token may have; Default
	// is what it gets when none is asked for.
	MaxLifetime     = 366 * 24 * time.Hour
	DefaultLifetime = 90 * 24 * time.Hour
	// MaxNameRunes bounds a token's name.
	MaxNameRunes = 64
	// cacheSize bounds the tokens a replica remembers.
	cacheSize = 1024
	// idLen is the length of a token's id (base32), secretLen of its
	// secret (256 bits, base64url).
	idLen     = 16
	secretLen = 43
)

var (
	// ErrInvalid is a presented token that is not a live one.
	ErrInvalid = errors.New("apitoken: invalid token")
	// ErrNotFound: no such token to revoke.
	ErrNotFound = errors.New("apitoken: no such token")
	// ErrTooMany: MaxTokens are live.
	ErrTooMany = fmt.Errorf("apitoken: at most %d tokens may be live; revoke one first", MaxTokens)
	// ErrInvalidName: a name empty, too long or with control characters.
	ErrInvalidName = fmt.Errorf("apitoken: name must be 1 to %d characters without control or format characters", MaxNameRunes)
	// ErrInvalidExpiry: an expiry out of range.
	ErrInvalidExpiry = fmt.Errorf("apitoken: expires_in_s must be a whole number of seconds from 60 to %d", int(MaxLifetime/time.Second))
)

//go:embed scripts/create.lua
var createLua string

//go:embed scripts/lookup.lua
var lookupLua string

//go:embed scripts/revoke.lua
var revokeLua string

//go:embed scripts/list.lua
var listLua string

var (
	createScript = redis.NewScript(createLua)
	lookupScript = redis.NewScript(lookupLua)
	revokeScript = redis.NewScript(revokeLua)
	listScript   = redis.NewScript(listLua)
)

// keys are the three keys every script takes.
var keys = []string{rediskeys.APITokens, rediskeys.APITokenExpiry, rediskeys.APITokenUsed}

// Token is a token as the admin API shows it: never its secret.
type Token struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Role       adminauth.Role  `json:"role"`
	Queues     []string        `json:"queues"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	LastUsedAt *time.Time      `json:"last_used_at"`
	CreatedBy  *actor.Actor    `json:"created_by,omitempty"`
	grant      adminauth.Grant // Role and Queues
}

// record is a token as Redis keeps it.
type record struct {
	ID        string       `json:"id"`
	Name      string       `json:"name"`
	Role      string       `json:"role"`
	Queues    []string     `json:"queues"`
	CreatedMS int64        `json:"created_ms"`
	ExpiresMS int64        `json:"expires_ms"`
	Hash      string       `json:"hash"` // base64url of the secret's keyed hash
	CreatedBy *actor.Actor `json:"created_by,omitempty"`
}

func (r record) token() (Token, error) {
	role, err := adminauth.ParseRole(r.Role)
	if err != nil {
		return Token{}, err
	}
	q := r.Queues
	if q == nil {
		q = []string{}
	}
	return Token{ID: r.ID, Name: r.Name, Role: role, Queues: q, CreatedAt: time.UnixMilli(r.CreatedMS).UTC(),
		ExpiresAt: time.UnixMilli(r.ExpiresMS).UTC(), CreatedBy: r.CreatedBy, grant: adminauth.Grant{Role: role, Queues: r.Queues}}, nil
}

// Redis is the part of a go-redis client the tokens use.
type Redis interface {
	redis.Scripter
	Time(ctx context.Context) *redis.TimeCmd
}

// Tokens creates, lists, revokes and verifies tokens.
type Tokens struct {
	rdb   Redis
	key   []byte // the hash's key
	now   func() time.Time
	cache *lru.Cache[string, cached] // tokens found valid (lru.Cache locks itself)
	// revoked are the tokens this replica revoked within CacheFor: a
	// lookup that began before the revocation must not trust them again.
	revoked *lru.Cache[string, time.Time]
}

// cached is a token found valid, until when this replica trusts it.
type cached struct {
	tok   Token
	hash  []byte
	until time.Time
}

// Option changes a Tokens.
type Option func(*Tokens)

// WithClock sets the clock the cache's trust is measured on (tests).
func WithClock(now func() time.Time) Option { return func(t *Tokens) { t.now = now } }

// New returns the tokens kept in rdb, their secrets hashed under a key
// derived from secret (WAITROOM_SECRET, or the shared generated one).
func New(rdb Redis, secret []byte, opts ...Option) (*Tokens, error) {
	if rdb == nil || len(secret) == 0 {
		return nil, errors.New("apitoken: need Redis and a secret")
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("waitroom api token hash v1"))
	c, _ := lru.New[string, cached](cacheSize) // positive sizes cannot fail
	r, _ := lru.New[string, time.Time](cacheSize)
	t := &Tokens{rdb: rdb, key: m.Sum(nil), now: time.Now, cache: c, revoked: r}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

// hash is secret's keyed hash.
func (t *Tokens) hash(secret string) []byte {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(secret))
	return m.Sum(nil)
}

// Request is what an admin asks a token to be.
type Request struct {
	Name      string
	Grant     adminauth.Grant
	ExpiresIn time.Duration // 0: DefaultLifetime
	By        actor.Actor
}

// Check reports what is wrong with req, if anything.
func (req Request) Check() error {
	n := utf8.RuneCountInString(req.Name)
	if !utf8.ValidString(req.Name) || n < 1 || n > MaxNameRunes || strings.ContainsFunc(req.Name, disguising) {
		return ErrInvalidName
	}
	if req.ExpiresIn != 0 && (req.ExpiresIn < time.Minute || req.ExpiresIn > MaxLifetime || req.ExpiresIn%time.Second != 0) {
		return ErrInvalidExpiry
	}
	return req.Grant.Check()
}

// disguising reports whether r is a character that can make a name read
// as another: control characters, and format ones (bidirectional
// overrides, zero-width joiners).
func disguising(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }

// Create makes a token; the secret is in the returned string alone, and
// is never kept.
func (t *Tokens) Create(ctx context.Context, req Request) (Token, string, error) {
	if err := req.Check(); err != nil {
		return Token{}, "", err
	}
	if req.ExpiresIn == 0 {
		req.ExpiresIn = DefaultLifetime
	}
	now, err := t.rdb.Time(ctx).Result()
	if err != nil {
		return Token{}, "", fmt.Errorf("apitoken: create: %w", err)
	}
	id := strings.ToLower(rand.Text()[:idLen])
	secret := base64.RawURLEncoding.EncodeToString(random32())
	rec := record{ID: id, Name: req.Name, Role: req.Grant.Role.String(), Queues: req.Grant.Queues,
		CreatedMS: now.UnixMilli(), ExpiresMS: now.Add(req.ExpiresIn).UnixMilli(),
		Hash: base64.RawURLEncoding.EncodeToString(t.hash(secret))}
	if !req.By.IsZero() {
		rec.CreatedBy = &req.By
	}
	b, _ := json.Marshal(rec) // plain fields: cannot fail
	ok, err := createScript.Run(ctx, t.rdb, keys, id, b, rec.ExpiresMS, rec.CreatedMS, MaxTokens).Int()
	if err != nil {
		return Token{}, "", fmt.Errorf("apitoken: create: %w", err)
	}
	if ok != 1 {
		return Token{}, "", ErrTooMany
	}
	tok, _ := rec.token() // the role was checked
	return tok, Prefix + id + "_" + secret, nil
}

func random32() []byte {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// List returns the live tokens, oldest first.
func (t *Tokens) List(ctx context.Context) ([]Token, error) {
	v, err := listScript.Run(ctx, t.rdb, keys).StringSlice()
	if err != nil {
		return nil, fmt.Errorf("apitoken: list: %w", err)
	}
	out := make([]Token, 0, len(v)/2)
	for i := 0; i+1 < len(v); i += 2 {
		var rec record
		if json.Unmarshal([]byte(v[i]), &rec) != nil {
			continue
		}
		tok, err := rec.token()
		if err != nil {
			continue
		}
		if ms, err := parseMS(v[i+1]); err == nil {
			at := time.UnixMilli(ms).UTC()
			tok.LastUsedAt = &at
		}
		out = append(out, tok)
	}
	slices.SortFunc(out, func(a, b Token) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func parseMS(s string) (int64, error) {
	var ms int64
	_, err := fmt.Sscan(s, &ms)
	return ms, err
}

// Revoke deletes the token id: this replica refuses it at once (even to a
// check under way), every other within CacheFor.
func (t *Tokens) Revoke(ctx context.Context, id string) error {
	t.revoked.Add(id, t.now().Add(CacheFor))
	t.cache.Remove(id)
	n, err := revokeScript.Run(ctx, t.rdb, keys, id).Int()
	if err != nil {
		return fmt.Errorf("apitoken: revoke: %w", err)
	}
	t.cache.Remove(id) // a lookup that raced the script
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

// Principal is who a valid token stands for.
func (tok Token) Principal() adminauth.Principal {
	return adminauth.Principal{Actor: actor.Actor{Kind: actor.KindToken, Name: tok.Name}, Grants: []adminauth.Grant{tok.grant}}
}

// Verify returns the live token that presented is: from this replica's
// memory while it trusts it (no Redis command), else from Redis, where
// its last use is noted. ErrInvalid when it is not one, for the caller's
// lockout to count.
func (t *Tokens) Verify(ctx context.Context, presented string) (Token, error) {
	rest, ok := strings.CutPrefix(presented, Prefix)
	id, secret, ok2 := strings.Cut(rest, "_")
	if !ok || !ok2 || len(id) != idLen || len(secret) != secretLen {
		return Token{}, ErrInvalid
	}
	h := t.hash(secret)
	if c, ok := t.cache.Get(id); ok && t.now().Before(c.until) {
		if subtle.ConstantTimeCompare(h, c.hash) != 1 {
			return Token{}, ErrInvalid
		}
		return c.tok, nil
	}
	v, err := lookupScript.Run(ctx, t.rdb, keys, id, base64.RawURLEncoding.EncodeToString(h)).Slice()
	if err != nil {
		return Token{}, fmt.Errorf("apitoken: lookup: %w", err)
	}
	if len(v) != 3 {
		return Token{}, fmt.Errorf("apitoken: lookup: unexpected reply %v", v)
	}
	raw, _ := v[0].(string)
	left, _ := v[2].(int64)
	var r record
	if raw == "" || json.Unmarshal([]byte(raw), &r) != nil {
		t.cache.Remove(id)
		return Token{}, ErrInvalid
	}
	want, err := base64.RawURLEncoding.DecodeString(r.Hash)
	tok, terr := r.token()
	if err != nil || terr != nil || subtle.ConstantTimeCompare(h, want) != 1 {
		return Token{}, ErrInvalid
	}
	if until, ok := t.revoked.Get(id); ok && t.now().Before(until) {
		return Token{}, ErrInvalid // read before this replica revoked it
	}
	t.cache.Add(id, cached{tok: tok, hash: want, until: t.now().Add(min(CacheFor, time.Duration(left)*time.Millisecond))})
	return tok, nil
}
