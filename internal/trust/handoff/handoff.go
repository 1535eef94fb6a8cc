// Package handoff moves a place in line to another device: the holder of
// a place asks for a hand-over (Create), shown as a link with a long
// token (in a QR code) and a short code to type; the other device uses
// one of them once (Enter) and gets the place, the same member at the
// same position, with a fresh credential. The move is the queue's
// (queue.Store.MovePlace): the place's generation goes up, so every
// credential issued before it stops working at once in the queue's
// scripts (enter, status, leave: ErrMoved), and the move is recorded for
// the replicas' far-back status path, which answers without Redis
// (Tracker). This package writes only its own keys (rediskeys.Handoff*).
//
// A hand-over lives TTL (two minutes), is used at most once (the claim
// script deletes it before the place moves), belongs to one queue (its keys
// carry the queue's hash tag) and to one member (a new one replaces the
// member's last). Tokens and codes are kept as SHA-256 hashes.
//
// # Guessing a code
//
// A code is CodeLen = 8 symbols from a 32-symbol alphabet: 32^8 = 2^40 ≈
// 1.1 × 10^12 codes. Failed attempts by code are limited per queue to
// QueueAttempts = 100 per QueueWindow = 1 minute (and per client to
// ClientAttempts = 10 per ClientWindow = 10 minutes). A code lives 2
// minutes, which overlaps at most 3 of the queue's windows, so at most
// 3 × 100 = 300 wrong guesses are tried in the queue during its life,
// from however many addresses: the chance that they hit one given code is
// at most 300 / 2^40 ≈ 2.7 × 10^-10, and that they hit any of L codes
// live at the same time at most 300 L / 2^40, below 10^-6 for up to 3,600
// hand-overs open at once in one queue. The price: someone who fails 100
// codes a minute in a queue keeps everyone from typing codes there for
// that minute (the QR link, a 256-bit token, still works: tokens count
// against the client's limit only).
package handoff

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// The contract of a hand-over.
const (
	// TTL is how long a hand-over can be used.
	TTL = 2 * time.Minute
	// CodeLen is the length of a code, in Alphabet's symbols.
	CodeLen = 8
	// Alphabet are the symbols of codes: digits and capitals without 0,
	// 1, I and O, which read alike.
	Alphabet = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"
	// QueueAttempts failed attempts by code per QueueWindow in a queue,
	// and ClientAttempts failed attempts (by code or token) per
	// ClientWindow from one client: see the package comment.
	QueueAttempts  = 100
	QueueWindow    = time.Minute
	ClientAttempts = 10
	ClientWindow   = 10 * time.Minute
	// tokenBytes is the randomness of a token: 256 bits.
	tokenBytes = 32
)

// Errors. ErrInvalid is the one answer for a token or code that is
// unknown, malformed, used, expired, for another queue, or whose place no
// longer waits: the caller learns nothing from which.
var (
	ErrInvalid    = errors.New("handoff: invalid or expired hand-over")
	ErrNotWaiting = errors.New("handoff: only a place waiting in line can move")
)

//go:embed scripts/common.lua
var commonLua string

//go:embed scripts/create.lua
var createLua string

//go:embed scripts/claim.lua
var claimLua string

//go:embed scripts/peek.lua
var peekLua string

//go:embed scripts/moved.lua
var movedLua string

var (
	createScript = redis.NewScript(commonLua + createLua)
	claimScript  = redis.NewScript(commonLua + claimLua)
	peekScript   = redis.NewScript(commonLua + peekLua)
	movedScript  = redis.NewScript(commonLua + movedLua)
)

// Store is what a hand-over asks of the queue store: to move the place
// once the hand-over is used, the ticket of its new holder, and to give up
// a place the new device held before.
type Store interface {
	MovePlace(ctx context.Context, queue, user string, gen int64) (queue.Move, error)
	Status(ctx context.Context, queue string, c queue.Caller) (queue.Ticket, error)
	Leave(ctx context.Context, queue string, c queue.Caller) error
}

// Service creates and uses hand-overs.
type Service struct {
	rdb     redis.Scripter
	store   Store
	tracker *Tracker
	timeout time.Duration
	qr      qrs // the hand-overs' QR codes (qr.go)
}

// New returns the hand-overs of the queues tracker follows, kept in rdb;
// every call ends within timeout.
func New(rdb redis.Scripter, store Store, tracker *Tracker, timeout time.Duration) *Service {
	return &Service{rdb: rdb, store: store, tracker: tracker, timeout: timeout, qr: newQRs()}
}

// Handoff is a live hand-over: the token for links, the code for typing
// (Alphabet, CodeLen symbols), and when both stop working.
type Handoff struct {
	Token   string
	Code    string
	Expires time.Time
}

// Create makes a hand-over of member's place in q, which the caller
// proves with a credential of generation gen; the member's earlier
// hand-over stops working. It fails with queue.ErrMoved when the
// credential is stale, ErrNotWaiting when the place is not in line.
func (s *Service) Create(ctx context.Context, q, member string, gen int64) (Handoff, error) {
	if !s.tracker.has(q) {
		return Handoff{}, queue.ErrUnknownQueue
	}
	k := keysFor(q)
	// A code taken by another live hand-over (one in 2^40 per live one)
	// is drawn again.
	for range 3 {
		h := Handoff{Token: newToken(), Code: newCode()}
		v, err := run(ctx, s, createScript, []string{k.live, k.expires, rediskeys.Gen(q), rediskeys.Waiting(q), rediskeys.Draw(q)},
			member, gen, tokenField(h.Token), codeField(h.Code), TTL.Milliseconds())
		if err != nil {
			return Handoff{}, fmt.Errorf("handoff: create: %w", err)
		}
		switch code, _ := v[0].(int64); code {
		case 1:
			at, _ := v[1].(int64)
			h.Expires = time.UnixMilli(at)
			return h, nil
		case -1:
			return Handoff{}, queue.ErrMoved
		case -2:
			return Handoff{}, ErrNotWaiting
		}
	}
	return Handoff{}, errors.New("handoff: create: no free code")
}

// Check reports whether token is member's live hand-over in q.
func (s *Service) Check(ctx context.Context, q, member, token string) error {
	if !s.tracker.has(q) || !isToken(token) {
		return ErrInvalid
	}
	_, err := s.expiry(ctx, q, member, token)
	return err
}

// expiry is when token, member's live hand-over in q, expires; ErrInvalid
// when it is not one.
func (s *Service) expiry(ctx context.Context, q, member, token string) (time.Time, error) {
	k := keysFor(q)
	at, err := queue.WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return peekScript.Run(ctx, s.rdb, []string{k.live}, tokenField(token), member).Int64()
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("handoff: check: %w", err)
	}
	if at == 0 {
		return time.Time{}, ErrInvalid
	}
	return time.UnixMilli(at), nil
}

// Moved is a place that moved to the caller: its member, arrival number
// (0: in a draw, or not known) and the generation of its new credential.
type Moved struct {
	Member string
	Seq    int64
	Gen    int64
}

// Enter moves the place of the hand-over that input names (a token, or a
// code as typed: case, spaces and dashes do not matter) in q to the
// caller from client (rate limits: clientip.Key; "" for none), and
// returns the place and its ticket. A place the caller held before in q
// (replaces, with the generation of its credential; "" for none) is given
// up. It fails with ErrInvalid, or a *queue.Retry of queue.ErrRateLimited
// over the attempt limits.
func (s *Service) Enter(ctx context.Context, q, input, client string, replaces string, replacesGen int64) (Moved, queue.Ticket, error) {
	m, err := s.claim(ctx, q, input, client)
	if err != nil {
		return Moved{}, queue.Ticket{}, err
	}
	s.tracker.moved(q, m.Member)
	if replaces != "" && replaces != m.Member {
		// The place this browser held is given up for the one it takes;
		// a failure leaves it to be abandoned, and the move stands.
		_ = s.store.Leave(ctx, q, queue.Caller{User: replaces, Credential: true, Gen: replacesGen})
	}
	t, err := s.store.Status(ctx, q, queue.Caller{User: m.Member, Credential: true, Gen: m.Gen})
	return m, t, err
}

func (s *Service) claim(ctx context.Context, q, input, client string) (Moved, error) {
	if !s.tracker.has(q) {
		return Moved{}, queue.ErrUnknownQueue
	}
	var field string
	if isToken(input) {
		field = tokenField(input)
	} else if code, ok := NormalizeCode(input); ok {
		field = codeField(code)
	} else {
		return Moved{}, ErrInvalid
	}
	k := keysFor(q)
	perClient := ClientAttempts
	if client == "" {
		perClient = 0 // the service's own calls, tests: no client to count
	}
	v, err := run(ctx, s, claimScript, []string{k.live, k.expires, k.clientTries(client), k.queueTries},
		field, perClient, ClientWindow.Milliseconds(), QueueAttempts, QueueWindow.Milliseconds())
	if err != nil {
		return Moved{}, fmt.Errorf("handoff: claim: %w", err)
	}
	switch code, _ := v[0].(int64); code {
	case 1:
		if len(v) != 3 {
			return Moved{}, fmt.Errorf("handoff: claim: reply of %d values", len(v))
		}
		member, _ := v[1].(string)
		gen, _ := v[2].(int64)
		return s.move(ctx, q, member, gen)
	case -1:
		wait, _ := v[1].(int64)
		return Moved{}, &queue.Retry{Err: queue.ErrRateLimited, After: time.Duration(wait) * time.Millisecond}
	default:
		return Moved{}, ErrInvalid
	}
}

// move asks the queue to move member's place, the hand-over just used
// having been made at generation gen. A place that moved since or no
// longer waits gets the answer of a used hand-over (ErrInvalid).
func (s *Service) move(ctx context.Context, q, member string, gen int64) (Moved, error) {
	m, err := s.store.MovePlace(ctx, q, member, gen)
	switch {
	case errors.Is(err, queue.ErrMoved), errors.Is(err, queue.ErrNotWaiting):
		return Moved{}, ErrInvalid
	case err != nil:
		return Moved{}, fmt.Errorf("handoff: move: %w", err)
	}
	return Moved{Member: member, Gen: m.Gen, Seq: m.Seq}, nil
}

// run runs script within the service's timeout and returns its reply as
// a list.
func run(ctx context.Context, s *Service, script *redis.Script, keys []string, args ...any) ([]any, error) {
	v, err := queue.WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
		return script.Run(ctx, s.rdb, keys, args...).Slice()
	})
	if err == nil && len(v) == 0 {
		err = errors.New("empty reply")
	}
	return v, err
}

// keys are a queue's hand-over keys (rediskeys.Handoff*), beside the
// queue's own (its hash tag).
type keys struct {
	q                  string
	live, expires      string
	queueTries, unused string
}

func keysFor(q string) keys {
	return keys{q: q, live: rediskeys.HandoffLive(q), expires: rediskeys.HandoffExpires(q),
		queueTries: rediskeys.HandoffQueueTries(q), unused: rediskeys.HandoffUnused(q)}
}

// clientTries is the counter of client's failed attempts ("" no client:
// a key the script then does not count in).
func (k keys) clientTries(client string) string {
	if client == "" {
		return k.unused
	}
	return rediskeys.HandoffClientTries(k.q, client)
}

// newToken is 256 random bits, base64url: 43 characters.
func newToken() string {
	var b [tokenBytes]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// tokenLen is the length of a token.
var tokenLen = base64.RawURLEncoding.EncodedLen(tokenBytes)

// isToken reports whether s is spelled as a token (not whether it is one).
func isToken(s string) bool {
	if len(s) != tokenLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// newCode is CodeLen symbols of Alphabet, uniformly: 32 divides 256, so
// a byte's low five bits are uniform.
func newCode() string {
	var b [CodeLen]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = Alphabet[b[i]&31]
	}
	return string(b[:])
}

// NormalizeCode reads a code as typed: spaces and dashes dropped, letters
// in either case. ok is false unless CodeLen symbols of Alphabet remain.
func NormalizeCode(s string) (string, bool) {
	if len(s) > 4*CodeLen {
		return "", false
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r == '-':
			continue
		case r >= 'a' && r <= 'z':
			r -= 'a' - 'A'
		}
		if r > 127 || !strings.ContainsRune(Alphabet, r) || b.Len() == CodeLen {
			return "", false
		}
		b.WriteRune(r)
	}
	if b.Len() != CodeLen {
		return "", false
	}
	return b.String(), true
}

// FormatCode is a code as shown: two groups of four ("ABCD-EFGH").
func FormatCode(code string) string {
	if len(code) != CodeLen {
		return code
	}
	return code[:4] + "-" + code[4:]
}

func tokenField(token string) string { return "t:" + hash(token) }
func codeField(code string) string   { return "c:" + hash(code) }

func hash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}
