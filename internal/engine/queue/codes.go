package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Invitation codes: an operator's batch of codes for a lane, each good
// for a number of uses until the batch expires or is revoked. The store
// knows only their digests (internal/trust/invite keys them): a code
// brought with an enter moves the caller's place into the code's lane at
// its arrival number and spends a use, in one script (redeem.lua). A
// queue without codes pays nothing for them: only an enter that brings a
// code reads them.

// Bounds of the codes.
const (
	// MaxCodesPerBatch bounds one batch: made or uploaded in one request.
	MaxCodesPerBatch = 100_000
	// MaxCodesPerQueue bounds the codes a queue holds (about 100 bytes of
	// Redis each), revoked batches' codes forgotten.
	MaxCodesPerQueue = 1_000_000
	// MaxCodeUses bounds the uses of one code.
	MaxCodeUses = 100_000
	// codesAddChunk is how many digests one codes_add.lua call stores.
	codesAddChunk = 1000
)

// Errors of the codes.
var (
	// ErrInvalidCode refuses a code that is unknown, spent, expired,
	// revoked or for a lane the queue no longer has: the call changed
	// nothing.
	ErrInvalidCode = errors.New("queue: invalid invitation code")
	// ErrInvalidCodeBatch refuses a batch out of bounds (400).
	ErrInvalidCodeBatch = errors.New("queue: invalid batch of codes")
	// ErrCodeExists refuses an upload that holds a code the queue has
	// already: nothing was stored.
	ErrCodeExists = errors.New("queue: a code of the batch exists already")
	// ErrTooManyCodes refuses a batch that would take the queue past
	// MaxCodesPerQueue: nothing was stored.
	ErrTooManyCodes = errors.New("queue: the queue holds as many codes as it may")
	// ErrBatchNotFound: no such batch of codes.
	ErrBatchNotFound = errors.New("queue: no such batch of codes")
)

// redeem.lua's answers (its header), in its order.
const (
	redeemMoved   = 1
	redeemInvalid = 2
	redeemNoPlace = 3
	redeemStale   = 4
)

var (
	redeemScript      = newScript("redeem", "", lua("redeem.lua"))
	codesAddScript    = newScript("codes_add", "", lua("codes_add.lua"))
	codesRevokeScript = newScript("codes_revoke", "", lua("codes_revoke.lua"))
)

// CodeBatch is a batch of invitation codes.
type CodeBatch struct {
	ID   string
	Lane string
	// Codes is how many codes the batch holds; Uses how often each may
	// be used; Used how many uses were spent, over all of them.
	Codes, Uses int
	Used        int64
	// ExpiresAt is when its codes stop working (zero: never).
	ExpiresAt time.Time
	CreatedAt time.Time
	// RevokedAt is when it was revoked (zero: it was not).
	RevokedAt time.Time
	// Uploaded says the operator gave the codes (else they were made).
	Uploaded bool
	// By is who made it (the audit log's actor), as JSON.
	By json.RawMessage
}

// batchRecord is a batch as the batches HASH holds it under its id.
type batchRecord struct {
	Lane      string          `json:"lane"`
	Codes     int             `json:"codes"`
	Uses      int             `json:"uses"`
	ExpiresMS int64           `json:"expires_ms,omitempty"`
	CreatedMS int64           `json:"created_ms"`
	Uploaded  bool            `json:"uploaded,omitempty"`
	By        json.RawMessage `json:"by,omitempty"`
}

// checkBatch refuses a batch out of bounds.
func checkBatch(b CodeBatch, digests []string, now time.Time) error {
	switch {
	case !CheckLaneName(b.Lane):
		return fmt.Errorf("%w: lane must be 1-32 of a-z, 0-9 and -", ErrInvalidCodeBatch)
	case len(digests) == 0 || len(digests) > MaxCodesPerBatch:
		return fmt.Errorf("%w: a batch holds 1 to %d codes", ErrInvalidCodeBatch, MaxCodesPerBatch)
	case b.Uses < 1 || b.Uses > MaxCodeUses:
		return fmt.Errorf("%w: uses must be 1 to %d", ErrInvalidCodeBatch, MaxCodeUses)
	case !b.ExpiresAt.IsZero() && !b.ExpiresAt.After(now):
		return fmt.Errorf("%w: expires_at must be in the future", ErrInvalidCodeBatch)
	}
	seen := make(map[string]bool, len(digests))
	for _, d := range digests {
		if d == "" || strings.ContainsAny(d, " \t\n") || seen[d] {
			return fmt.Errorf("%w: the codes must differ from one another", ErrInvalidCodeBatch)
		}
		seen[d] = true
	}
	return nil
}

// AddCodes stores a batch of codes for b.Lane, a lane of queue, by their
// digests, each good for b.Uses uses until b.ExpiresAt, and returns the
// batch with its id. All or nothing: a digest the queue holds already
// (ErrCodeExists), or more codes than the queue may hold
// (ErrTooManyCodes), stores none. The batch's codes redeem only once all
// are stored.
func (in *Inspector) AddCodes(ctx context.Context, queue string, b CodeBatch, digests []string) (CodeBatch, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return CodeBatch{}, err
	}
	now := time.Now()
	if err := checkBatch(b, digests, now); err != nil {
		return CodeBatch{}, err
	}
	if err := s.checkLane(ctx, queue, b.Lane); err != nil {
		return CodeBatch{}, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	b.ID, b.Codes, b.Used, b.CreatedAt, b.RevokedAt = hex.EncodeToString(id[:]), len(digests), 0, now, time.Time{}
	value := strconv.Itoa(b.Uses) + " " + b.ID + " " + b.Lane
	for i := 0; i < len(digests); i += codesAddChunk {
		chunk := digests[i:min(i+codesAddChunk, len(digests))]
		args := make([]any, 0, len(chunk)+2)
		args = append(args, value, MaxCodesPerQueue)
		for _, d := range chunk {
			args = append(args, d)
		}
		n, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
			return codesAddScript.Run(ctx, s.rdb, []string{q.keys.codes}, args...).Int64()
		})
		if err == nil && n != 0 {
			err = ErrCodeExists
			if n < 0 {
				err = ErrTooManyCodes
			}
		}
		if err != nil {
			in.forgetCodes(ctx, queue, digests[:i])
			return CodeBatch{}, err
		}
	}
	rec := batchRecord{Lane: b.Lane, Codes: b.Codes, Uses: b.Uses, CreatedMS: now.UnixMilli(), Uploaded: b.Uploaded, By: b.By}
	if !b.ExpiresAt.IsZero() {
		rec.ExpiresMS = b.ExpiresAt.UnixMilli()
	}
	js, _ := json.Marshal(rec) // strings, numbers and valid JSON: never fails
	_, err = WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		// The lane last: from it on, the batch's codes redeem.
		return s.rdb.HSet(ctx, q.keys.codeBatches, b.ID, js, b.ID+":expires_ms", rec.ExpiresMS, b.ID+":lane", b.Lane).Result()
	})
	if err != nil {
		in.forgetCodes(ctx, queue, digests)
		return CodeBatch{}, fmt.Errorf("queue: codes: %w", err)
	}
	return b, nil
}

// forgetCodes removes digests stored for a batch that was not completed
// (best effort: they redeem nothing without their batch's lane).
func (in *Inspector) forgetCodes(ctx context.Context, queue string, digests []string) {
	q, err := in.s.queue(queue)
	if err != nil || len(digests) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.s.timeout)
	defer cancel()
	_, _ = in.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := 0; i < len(digests); i += codesAddChunk {
			p.HDel(ctx, q.keys.codes, digests[i:min(i+codesAddChunk, len(digests))]...)
		}
		return nil
	})
}

// CodeBatches lists queue's batches of codes, the newest first, with the
// uses spent of each; revoked ones are listed with when.
func (in *Inspector) CodeBatches(ctx context.Context, queue string) ([]CodeBatch, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	all, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (map[string]string, error) {
		var cmd *redis.MapStringStringCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			cmd = p.HGetAll(ctx, q.keys.codeBatches)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return cmd.Val(), nil
	})
	if err != nil {
		return nil, fmt.Errorf("queue: codes: %w", err)
	}
	out := []CodeBatch{}
	for id, v := range all {
		if strings.Contains(id, ":") || all[id+":lane"] == "" {
			continue // a batch's other fields, or one not completed
		}
		var rec batchRecord
		if json.Unmarshal([]byte(v), &rec) != nil {
			continue
		}
		b := CodeBatch{ID: id, Lane: rec.Lane, Codes: rec.Codes, Uses: rec.Uses, Uploaded: rec.Uploaded, By: rec.By,
			CreatedAt: time.UnixMilli(rec.CreatedMS)}
		b.Used, _ = strconv.ParseInt(all[id+":used"], 10, 64)
		if rec.ExpiresMS > 0 {
			b.ExpiresAt = time.UnixMilli(rec.ExpiresMS)
		}
		if ms, err := strconv.ParseInt(all[id+":revoked_ms"], 10, 64); err == nil {
			b.RevokedAt = time.UnixMilli(ms)
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// RevokeCodes revokes queue's batch id: none of its codes redeems from
// then on, and they are forgotten (the batch stays listed, with its uses
// spent). Revoking a revoked batch again changes nothing;
// ErrBatchNotFound when there is no such batch.
func (in *Inspector) RevokeCodes(ctx context.Context, queue, id string) error {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if id == "" || len(id) > 64 || strings.ContainsAny(id, ": ") {
		return ErrBatchNotFound
	}
	keys := []string{q.keys.codes, q.keys.codeBatches}
	cursor := ""
	for {
		v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
			return codesRevokeScript.Run(ctx, s.rdb, keys, id, cursor).Slice()
		})
		if err != nil {
			return fmt.Errorf("queue: revoke codes: %w", err)
		}
		if len(v) != 2 {
			return fmt.Errorf("queue: revoke codes: unexpected reply %v", v)
		}
		if n, _ := v[0].(int64); n == 0 {
			return ErrBatchNotFound
		}
		cursor, _ = v[1].(string)
		if cursor == "0" || cursor == "" {
			return nil
		}
	}
}

// codeLane is the lane of the code of digest in queue, read before its
// redemption to name the lane's keys; ErrInvalidCode when the queue has
// no such code or its uses are spent (redeem.lua judges it again).
func (s *Store) codeLane(ctx context.Context, q *queueRef, digest string) (string, error) {
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (string, error) {
		v, err := s.rdb.HGet(ctx, q.keys.codes, digest).Result()
		if errors.Is(err, redis.Nil) {
			return "", nil
		}
		return v, err
	})
	if err != nil {
		return "", fmt.Errorf("queue: codes: %w", err)
	}
	f := strings.Fields(v)
	if len(f) != 3 || f[0] == "0" || !CheckLaneName(f[2]) {
		return "", ErrInvalidCode
	}
	return f[2], nil
}

// codeMember is the member id in lane of the place member holds: a site
// account's lane member (AccountMember), else a member of lane named by
// member's own id, so it stays unguessable as member was.
func codeMember(lane, member string) string {
	if sub := accountOf(member); sub != "" {
		return LaneMember(lane, sub)
	}
	return LaneMember(lane, member)
}

// Redeem enters e with an invitation code (digest: its keyed digest):
// the place e.User holds, in line, set aside at the head or in a
// scheduled opening's draw, moves into the code's lane at its arrival
// number under the lane's member id, and one use of the code is spent,
// in one script call (redeem.lua). A caller that holds no such place
// enters first as Enter does (the defences and all), and is then moved.
// Returns the ticket and the member id that holds the place now.
//
// A code that is unknown, spent, expired, revoked or for a lane the queue
// no longer has is ErrInvalidCode, and nothing changes (but in one race:
// a caller who had no place, whose code's last use went to another
// between its enter and its move, gives the place just made up again).
// A place already in the code's lane is answered as it is, nothing spent;
// so is an enter admitted at once (nobody waits): a lane cannot do better.
func (s *Store) Redeem(ctx context.Context, queue, digest string, e Entry) (Ticket, string, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Ticket{}, "", err
	}
	if err := ValidateUserID(e.User); err != nil {
		return Ticket{}, "", err
	}
	lane, err := s.codeLane(ctx, q, digest)
	if err != nil {
		return Ticket{}, "", err
	}
	if err := s.checkLane(ctx, queue, lane); err != nil {
		if errors.Is(err, ErrUnknownLane) {
			err = ErrInvalidCode
		}
		return Ticket{}, "", err
	}
	if LaneOf(e.User) == lane {
		t, err := s.Status(ctx, queue, Caller{User: e.User})
		if err == nil && t.Status == NotWaiting {
			t, err = s.Enter(ctx, queue, e)
		}
		return t, e.User, err
	}
	to := codeMember(lane, e.User)
	if err := ValidateUserID(to); err != nil {
		return Ticket{}, "", ErrInvalidCode // a site's id too long to carry a lane
	}
	gen := int64(-1)
	if e.Credential {
		gen = e.Gen
	}
	st, err := s.redeem(ctx, queue, digest, lane, e.User, to, gen)
	if err == nil && st == redeemNoPlace {
		t, err := s.Enter(ctx, queue, e)
		if err != nil || t.Status != Waiting {
			return t, e.User, err
		}
		if st, err = s.redeem(ctx, queue, digest, lane, e.User, to, gen); err == nil && st == redeemInvalid {
			_ = s.leave(ctx, queue, e.User, ReasonLeft) // the place this call made
		}
		if err == nil && st == redeemNoPlace {
			return t, e.User, nil // admitted since, or dropped: as the enter left it
		}
	}
	switch {
	case err != nil:
		return Ticket{}, "", err
	case st == redeemInvalid:
		return Ticket{}, "", ErrInvalidCode
	case st == redeemStale:
		return Ticket{}, "", ErrMoved
	}
	t, err := s.Status(ctx, queue, Caller{User: to})
	return t, to, err
}

// redeem runs redeem.lua: from's place into lane as member to, spending
// a use of digest's code. Returns the script's status.
func (s *Store) redeem(ctx context.Context, queue, digest, lane, from, to string, gen int64) (int64, error) {
	src, err := s.line(queue, from)
	if err != nil {
		return 0, err
	}
	dst, err := s.line(queue, to)
	if err != nil {
		return 0, err
	}
	a, b := src.keys, dst.keys
	keys := []string{a.codes, a.codeBatches, a.gen, a.waiting, a.held, a.draw, a.heard, a.stale, a.seq,
		b.waiting, b.held, b.draw, b.heard, b.seq, a.lanes}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		res, _ := s.runWaited(ctx, src, redeemScript, keys, digest, lane, from, to, gen)
		return res.Int64Slice()
	})
	if err != nil {
		return 0, fmt.Errorf("queue: redeem: %w", err)
	}
	if len(v) == 0 || v[0] < redeemMoved || v[0] > redeemStale {
		return 0, fmt.Errorf("queue: redeem: unexpected reply %v", v)
	}
	if v[0] == redeemMoved {
		src.stale.changed(from, time.Now()) // its credentials name a place that is gone
	}
	return v[0], nil
}
