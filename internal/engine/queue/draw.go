package queue

// A scheduled opening's draw that anyone can check (docs/DRAW.md):
// commit before, reveal after.
//
// When an opening is set, Go draws a 256-bit seed from crypto/rand and
// the settings script seals it (draw_seal.lua): the seed goes to a key
// of its own (rediskeys.DrawSeed) that nothing answering reads, and only
// its SHA-256, the commitment, is published (Sealed, in the line
// document, the pre-queue's answers and the waiting page). Once the
// pre-queue opens the seed is bound: a change that would need a new one
// is refused (ErrDrawSealed). Each participant joins under its draw key,
// HMAC-SHA256(seed, member id); at the opening the tick reveals the seed
// (DrawRecord.Seed) and places the participants lowest key first, and
// the draw's list (DrawEntries: the SHA-256 of each member id, its key,
// its place) lets anyone recompute the whole order.
//
// Why the key is computed here, not in Lua: Redis's Lua has SHA-1
// (redis.sha1hex) but no SHA-256, let alone HMAC. SHA-256 written in Lua
// 5.1 with the bit library costs, measured on the development machine,
// about 110 µs per 64-byte block (docs/perf-log/draw.md): an HMAC (its
// pads' blocks done once) and the id's hash are three blocks, a third of
// a ms of Redis's one thread per participant, where a whole enter costs a
// few µs, and 5 minutes of blocking to key a draw of a million at its
// opening. Go computes both in
// about a µs, once per enter while a draw is sealed, on the replica's
// many cores; the script checks that the keys were made with the seed
// sealed now (draw_id) before it keeps them. The seed stays in Redis
// (every replica must make the same keys) but in a key read only by the
// seal's own script (draw.lua) and by the tick that reveals it.

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrDrawSealed refuses a change of a queue's opening that would need a
// new seed for a draw whose seed is already bound (its pre-queue opened):
// closing the pre-queue again, or a new opening while the last draw is
// still being placed. The change changed nothing.
var ErrDrawSealed = errors.New("queue: the draw is sealed")

// DrawKeyLen is the bytes of a draw key (HMAC-SHA256) and of a member
// id's hash (SHA-256).
const DrawKeyLen = sha256.Size

// DrawKey is member's draw key under seed (the seed's bytes):
// HMAC-SHA256 keyed by the seed, of the member id's bytes.
func DrawKey(seed []byte, member string) []byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte(member))
	return m.Sum(nil)
}

// DrawCommitment is the public commitment to seed: its SHA-256, hex.
func DrawCommitment(seed []byte) string {
	sum := sha256.Sum256(seed)
	return hex.EncodeToString(sum[:])
}

// freshSeal is a new seed (hex), its commitment and its id, as the
// scripts take them (draw_seal.lua).
func freshSeal() (seed, commitment, id string) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	commitment = DrawCommitment(b[:])
	return hex.EncodeToString(b[:]), commitment, drawID(commitment)
}

// drawID is a commitment's id: its first 13 hex digits (52 bits, which
// Lua holds exactly) as a decimal number.
func drawID(commitment string) string {
	if len(commitment) < 13 {
		return ""
	}
	n, err := strconv.ParseUint(commitment[:13], 16, 64)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(n, 10)
}

// seal is the sealed draw as this replica knows it, for its enters: the
// id the script checks and the seed the keys are made with. Never
// logged, never answered.
type seal struct {
	gen  uint64 // the read it came from: a call that failed with an older one reads again
	id   string // "": no draw sealed
	seed []byte
}

// seals holds each queue's seal as this replica last read it.
type seals struct {
	mu  sync.Mutex // one read at a time
	cur atomic.Pointer[seal]
	n   atomic.Uint64
}

// drawStale is statusDrawStale's refusal: the call's keys were not the
// sealed draw's, made with the seal of read gen.
type drawStale struct{ gen uint64 }

func (drawStale) Error() string { return "queue: the draw's seal changed" }

// sealOf is queue's seal on this replica (nil: none read yet).
func (s *Store) sealOf(queue string) *seals {
	return s.draws[queue]
}

// readSeal reads queue's seal (draw.lua, which seals one if an opening
// lies ahead and none is) unless one newer than gen was read meanwhile.
func (s *Store) readSeal(ctx context.Context, queue string, gen uint64) error {
	sl := s.sealOf(queue)
	if sl == nil {
		return ErrUnknownQueue
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if c := sl.cur.Load(); c != nil && c.gen > gen {
		return nil
	}
	k := keysFor(queue)
	seed, commitment, id := freshSeal()
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]string, error) {
		return drawScript.Run(ctx, s.rdb, []string{k.config, k.drawSeed, k.tick}, seed, commitment, id).StringSlice()
	})
	if err != nil {
		return fmt.Errorf("queue: draw: %w", err)
	}
	next := &seal{gen: sl.n.Add(1)}
	if len(v) == 3 && v[0] != "" {
		b, err := hex.DecodeString(v[1])
		if err != nil || len(b) == 0 {
			return fmt.Errorf("queue: draw: the sealed seed is unreadable")
		}
		next.id, next.seed = v[0], b
	}
	sl.cur.Store(next)
	return nil
}

// drawArgs are enter.lua's draw arguments for calls: the sealed draw's id
// and, per call, its draw key and the SHA-256 of its member id, when this
// replica holds a seal; else none (""), and the script asks for one only
// from a pre-queue's enter. Also the read they come from.
func drawArgs(sl *seals, calls []Caller) (id string, entries []string, gen uint64) {
	if sl == nil {
		return "", nil, 0
	}
	c := sl.cur.Load()
	if c == nil {
		return "", nil, 0
	}
	if c.id == "" {
		return "", nil, c.gen
	}
	entries = make([]string, len(calls))
	for i, call := range calls {
		id := sha256.Sum256([]byte(call.User))
		entries[i] = string(append(DrawKey(c.seed, call.User), id[:]...))
	}
	return c.id, entries, c.gen
}

// dropSeal forgets queue's seal when an enter's answer shows no opening
// ahead, so that enters stop paying for the keys once the draw is made.
func (s *Store) dropSeal(queue string, t Ticket) {
	sl := s.sealOf(queue)
	if sl == nil || sl.cur.Load() == nil {
		return
	}
	if t.OpensAt.IsZero() || !t.OpensAt.After(time.Now()) {
		sl.cur.Store(nil)
	}
}

// DrawRecord is a queue's last draw, revealed (Store.Draw): its seed
// may be published from the moment the record exists.
type DrawRecord struct {
	// For is the opening it was made for (or when it was placed, if the
	// operator cleared the opening); zero: no draw made yet.
	For time.Time
	// Seed is the revealed seed (hex; "" for a draw whose participants
	// joined before draws were sealed), Commitment its SHA-256 (hex).
	Seed, Commitment string
	// Count is the participants placed so far, every line's.
	Count int64
	// Placing is true while the draw is being placed: its list grows.
	Placing bool
	// Lines are the draw's lines: the general lane's first (Lane ""),
	// then each lane that had participants, with the places of each.
	Lines []DrawLine
}

// DrawLine is one line's part of a draw: its places 1..Count.
type DrawLine struct {
	Lane  string
	Count int64
}

// DrawState is what may be said of a queue's draws now (Store.Draw):
// the sealed draw's commitment (no seed) and the last draw revealed.
type DrawState struct {
	// Sealed is the commitment of the draw the next opening makes, hex
	// ("": none sealed).
	Sealed string
	Last   DrawRecord
}

// Draw reads queue's draw state: the sealed draw's commitment (never its
// seed) and the last draw's record, two HMGETs in one round trip (and
// a second for the lanes' places, with lanes).
func (s *Store) Draw(ctx context.Context, queue string) (DrawState, error) {
	q, err := s.queue(queue)
	if err != nil {
		return DrawState{}, err
	}
	k := q.keys
	type read struct {
		sealed string
		tick   []any
	}
	r, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (read, error) {
		var r read
		var sealed, tick *redis.SliceCmd
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			sealed = p.HMGet(ctx, k.config, "draw_commitment")
			tick = p.HMGet(ctx, k.tick, "draw_for", "draw_seed", "draw_commitment", "draw_count", "draw_placing", "draw_lines", "draw_n")
			return nil
		})
		if err != nil {
			return r, err
		}
		if v := sealed.Val(); len(v) == 1 {
			r.sealed, _ = v[0].(string)
		}
		r.tick = tick.Val()
		return r, nil
	})
	if err != nil {
		return DrawState{}, fmt.Errorf("queue: draw: %w", err)
	}
	st := DrawState{Sealed: r.sealed}
	t := r.tick
	if len(t) != 7 {
		return st, nil
	}
	str := func(i int) string { v, _ := t[i].(string); return v }
	num := func(i int) int64 { n, _ := strconv.ParseInt(str(i), 10, 64); return n }
	if num(0) == 0 {
		return st, nil
	}
	st.Last = DrawRecord{For: time.UnixMilli(num(0)), Seed: str(1), Commitment: str(2), Count: num(3), Placing: num(4) == 1,
		Lines: []DrawLine{{Lane: "", Count: num(6)}}}
	if !isHex32(st.Last.Seed) || !isHex32(st.Last.Commitment) {
		// A draw made before draws were sealed (its seed a 52-bit
		// number, or none): nothing in it can be checked.
		st.Last.Seed, st.Last.Commitment = "", ""
	}
	if lanes := str(5); lanes != "" {
		names := strings.Split(lanes, ",")
		fields := make([]string, len(names))
		for i, n := range names {
			fields[i] = "draw_n:" + n
		}
		v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
			return s.rdb.HMGet(ctx, k.tick, fields...).Result()
		})
		if err != nil {
			return DrawState{}, fmt.Errorf("queue: draw: %w", err)
		}
		for i, n := range names {
			c, _ := v[i].(string)
			m, _ := strconv.ParseInt(c, 10, 64)
			st.Last.Lines = append(st.Last.Lines, DrawLine{Lane: n, Count: m})
		}
	}
	return st, nil
}

// DrawCacheTTL is how long a replica answers a queue's draw state from
// memory (PageDraw).
const DrawCacheTTL = time.Second

// PageDraw is Draw read at most once per DrawCacheTTL per queue on this
// replica: what the answers of enter and status, the line document and
// the draw's list say of it.
func (s *Store) PageDraw(ctx context.Context, queue string) (DrawState, error) {
	if _, err := s.queue(queue); err != nil {
		return DrawState{}, err
	}
	return s.drawStates.get(ctx, queue, s.Draw)
}

// DrawEntry is one place of a draw's list: the SHA-256 of the member id
// and the member's draw key (DrawKeyLen bytes each). Its place is its
// index in the line's list, from 1.
type DrawEntry struct {
	IDHash, Key []byte
}

// DrawEntries reads the entries of lane's line ("": the general lane's)
// of queue's last draw from place from (1-based), at most n of them (one
// LRANGE).
func (s *Store) DrawEntries(ctx context.Context, queue, lane string, from, n int64) ([]DrawEntry, error) {
	if _, err := s.queue(queue); err != nil {
		return nil, err
	}
	if from < 1 || n < 1 {
		return nil, nil
	}
	k := keysForLine(queue, lane)
	raw, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]string, error) {
		return s.rdb.LRange(ctx, k.drawList, from-1, from+n-2).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: draw entries: %w", err)
	}
	out := make([]DrawEntry, 0, len(raw))
	for _, e := range raw {
		if len(e) != 2*DrawKeyLen {
			return nil, fmt.Errorf("queue: draw entries: an entry of %d bytes", len(e))
		}
		out = append(out, DrawEntry{Key: []byte(e[:DrawKeyLen]), IDHash: []byte(e[DrawKeyLen:])})
	}
	return out, nil
}

// drawPlaceBase is the score of a draw's first place (DRAW_BASE,
// tick_close.lua): a status's negative arrival number is the place's
// score, its place in the draw less drawPlaceBase + 1.
const drawPlaceBase = -(1 << 52)

// isHex32 reports whether s is 32 bytes in lowercase hex, as the draw's
// seed and commitment are written.
func isHex32(s string) bool {
	if len(s) != 2*DrawKeyLen {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
