package apitoken_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/apitoken"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var secret = []byte("apitoken-test-secret-0123456789abcdef")

// clock is a clock a test steps.
type clock struct{ ns atomic.Int64 }

func newClock() *clock               { c := &clock{}; c.ns.Store(time.Now().UnixNano()); return c }
func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }

func newTokens(t *testing.T, rdb redis.UniversalClient, c *clock) *apitoken.Tokens {
	t.Helper()
	tk, err := apitoken.New(rdb, secret, apitoken.WithClock(c.now))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func create(t *testing.T, tk *apitoken.Tokens, name string, g adminauth.Grant) (apitoken.Token, string) {
	t.Helper()
	tok, s, err := tk.Create(context.Background(), apitoken.Request{Name: name, Grant: g, ExpiresIn: time.Hour,
		By: actor.Actor{Kind: actor.KindOIDC, Name: "kim@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	return tok, s
}

func TestCreateVerifyList(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	tk := newTokens(t, rdb, newClock())
	tok, s := create(t, tk, "grafana", adminauth.Grant{Role: adminauth.Viewer, Queues: []string{"sale"}})
	if !strings.HasPrefix(s, "wrt_"+tok.ID+"_") || len(s) != len("wrt_")+16+1+43 {
		t.Fatalf("token %q for id %q", s, tok.ID)
	}
	got, err := tk.Verify(ctx, s)
	if err != nil || got.ID != tok.ID || got.Name != "grafana" || got.Role != adminauth.Viewer {
		t.Fatalf("verify: %+v %v", got, err)
	}
	p := got.Principal()
	if p.Actor != (actor.Actor{Kind: actor.KindToken, Name: "grafana"}) || !p.Sees("sale") || p.Sees("refund") || p.Allows(adminauth.Operator, "sale") {
		t.Fatalf("principal %+v", p)
	}
	list, err := tk.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(list, func(x apitoken.Token) bool { return x.ID == tok.ID })
	if i < 0 || list[i].LastUsedAt == nil || list[i].CreatedBy == nil || list[i].CreatedBy.Name != "kim@example.com" {
		t.Fatalf("list: %+v", list)
	}
	// Nothing in Redis holds the secret.
	all, _ := rdb.HGetAll(ctx, rediskeys.APITokens).Result()
	for _, v := range all {
		if strings.Contains(v, s[len("wrt_")+17:]) {
			t.Fatalf("the secret is stored: %s", v)
		}
	}
}

// TestForgeriesNeverVerify: any change to a valid token, and tokens made
// with another key, are refused.
func TestForgeriesNeverVerify(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	tk := newTokens(t, rdb, newClock())
	_, s := create(t, tk, "forge", adminauth.Grant{Role: adminauth.Admin})
	other, err := apitoken.New(rdb, []byte("another-replica-secret-0123456789"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Verify(ctx, s); !errors.Is(err, apitoken.ErrInvalid) {
		t.Fatalf("a replica with another key verified it: %v", err)
	}
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_ \x00\xff"
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := []byte(s)
		switch r.IntN(4) {
		case 0: // one character changed
			j := r.IntN(len(b))
			c := alphabet[r.IntN(len(alphabet))]
			if c == b[j] {
				continue
			}
			b[j] = c
		case 1: // cut
			b = b[:r.IntN(len(b))]
		case 2: // grown
			b = append(b, alphabet[r.IntN(len(alphabet))])
		case 3: // random
			b = make([]byte, r.IntN(80))
			for k := range b {
				b[k] = alphabet[r.IntN(len(alphabet))]
			}
		}
		if _, err := tk.Verify(ctx, string(b)); !errors.Is(err, apitoken.ErrInvalid) {
			t.Fatalf("%q verified (or %v)", b, err)
		}
	}
	if _, err := tk.Verify(ctx, s); err != nil {
		t.Fatalf("the real one after: %v", err)
	}
}

// TestRevokedEverywhereWithinASecond: the replica that revokes refuses at
// once; one that trusted the token a moment before refuses once CacheFor
// has passed on its clock, without being told.
func TestRevokedEverywhereWithinASecond(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	ca, cb := newClock(), newClock()
	a, b := newTokens(t, rdb, ca), newTokens(t, rdb, cb)
	tok, s := create(t, a, "ci", adminauth.Grant{Role: adminauth.Operator})
	for _, tk := range []*apitoken.Tokens{a, b} {
		if _, err := tk.Verify(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Revoke(ctx, tok.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Verify(ctx, s); !errors.Is(err, apitoken.ErrInvalid) {
		t.Fatalf("the revoking replica: %v", err)
	}
	cb.add(apitoken.CacheFor)
	if _, err := b.Verify(ctx, s); !errors.Is(err, apitoken.ErrInvalid) {
		t.Fatalf("another replica %s later: %v", apitoken.CacheFor, err)
	}
	if err := a.Revoke(ctx, tok.ID); !errors.Is(err, apitoken.ErrNotFound) {
		t.Fatalf("revoked twice: %v", err)
	}
}

// TestTrustedTokenCostsNoRedis: within CacheFor a valid token is checked
// without a Redis command (a dead Redis still lets it through), and a
// wrong secret for a trusted id is still refused.
func TestTrustedTokenCostsNoRedis(t *testing.T) {
	ctx := context.Background()
	ctr := redistest.NewContainer(t)
	rdb := ctr.Client(t, &redis.Options{})
	c := newClock()
	tk := newTokens(t, rdb, c)
	_, s := create(t, tk, "dash", adminauth.Grant{Role: adminauth.Viewer})
	if _, err := tk.Verify(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := ctr.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(ctx, s); err != nil {
		t.Fatalf("trusted token with Redis down: %v", err)
	}
	if _, err := tk.Verify(ctx, s[:len(s)-1]+"A"); !errors.Is(err, apitoken.ErrInvalid) && s[len(s)-1] != 'A' {
		t.Fatalf("a wrong secret for a trusted id: %v", err)
	}
	c.add(apitoken.CacheFor)
	if _, err := tk.Verify(ctx, s); err == nil || errors.Is(err, apitoken.ErrInvalid) {
		t.Fatalf("past CacheFor with Redis down: want a Redis error, got %v", err)
	}
}

func TestExpiredTokensAreRefusedAndSwept(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	tk := newTokens(t, rdb, newClock())
	tok, s := create(t, tk, "old", adminauth.Grant{Role: adminauth.Viewer})
	// Its expiry, moved into the past on the Redis clock.
	if err := rdb.ZAdd(ctx, rediskeys.APITokenExpiry, redis.Z{Score: 1, Member: tok.ID}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Verify(ctx, s); !errors.Is(err, apitoken.ErrInvalid) {
		t.Fatalf("expired: %v", err)
	}
	list, err := tk.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(list, func(x apitoken.Token) bool { return x.ID == tok.ID }) {
		t.Fatal("an expired token is listed")
	}
	if n, _ := rdb.HExists(ctx, rediskeys.APITokens, tok.ID).Result(); n {
		t.Fatal("an expired token is kept")
	}
}

func TestRequestCheck(t *testing.T) {
	long := strings.Repeat("é", apitoken.MaxNameRunes+1)
	for _, c := range []struct {
		name string
		req  apitoken.Request
		want error
	}{
		{"ok", apitoken.Request{Name: "grafana", Grant: adminauth.Grant{Role: adminauth.Viewer}}, nil},
		{"unicode name", apitoken.Request{Name: strings.Repeat("é", apitoken.MaxNameRunes), Grant: adminauth.Grant{Role: adminauth.Viewer}}, nil},
		{"no name", apitoken.Request{Grant: adminauth.Grant{Role: adminauth.Viewer}}, apitoken.ErrInvalidName},
		{"long name", apitoken.Request{Name: long, Grant: adminauth.Grant{Role: adminauth.Viewer}}, apitoken.ErrInvalidName},
		{"control", apitoken.Request{Name: "a\nb", Grant: adminauth.Grant{Role: adminauth.Viewer}}, apitoken.ErrInvalidName},
		{"not UTF-8", apitoken.Request{Name: "a\xffb", Grant: adminauth.Grant{Role: adminauth.Viewer}}, apitoken.ErrInvalidName},
		{"no role", apitoken.Request{Name: "x"}, adminauth.ErrInvalidRole},
		{"admin with queues", apitoken.Request{Name: "x", Grant: adminauth.Grant{Role: adminauth.Admin, Queues: []string{"a"}}}, adminauth.ErrInvalidQueues},
		{"bad queue", apitoken.Request{Name: "x", Grant: adminauth.Grant{Role: adminauth.Viewer, Queues: []string{"a{b}"}}}, adminauth.ErrInvalidQueues},
		{"too short", apitoken.Request{Name: "x", Grant: adminauth.Grant{Role: adminauth.Viewer}, ExpiresIn: time.Second}, apitoken.ErrInvalidExpiry},
		{"too long", apitoken.Request{Name: "x", Grant: adminauth.Grant{Role: adminauth.Viewer}, ExpiresIn: apitoken.MaxLifetime + time.Second}, apitoken.ErrInvalidExpiry},
		{"fraction", apitoken.Request{Name: "x", Grant: adminauth.Grant{Role: adminauth.Viewer}, ExpiresIn: time.Hour + time.Millisecond}, apitoken.ErrInvalidExpiry},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.req.Check(); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestAtMostMaxTokens: the store refuses a token past MaxTokens, and
// concurrent creations never exceed it.
func TestAtMostMaxTokens(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Client(t)
	tk := newTokens(t, rdb, newClock())
	have, err := tk.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var made atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Go(func() {
			for {
				_, _, err := tk.Create(ctx, apitoken.Request{Name: "bulk", Grant: adminauth.Grant{Role: adminauth.Viewer}})
				if errors.Is(err, apitoken.ErrTooMany) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				made.Add(1)
			}
		})
	}
	wg.Wait()
	if got := int(made.Load()) + len(have); got != apitoken.MaxTokens {
		t.Fatalf("%d live tokens, want exactly %d", got, apitoken.MaxTokens)
	}
	list, _ := tk.List(ctx)
	for _, x := range list {
		if x.Name == "bulk" {
			if err := tk.Revoke(ctx, x.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}
