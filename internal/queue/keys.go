package queue

import (
	"strconv"
	"time"
)

// keys holds the Redis keys of one queue. Every key carries the queue name
// as a hash tag ("wr:{name}:..."), so all of them live in one Cluster slot
// and a script may touch them together. Scripts get them through KEYS and
// never build key names themselves.
type keys struct {
	waiting string // ZSET member=user id, score=arrival number from seq
	entered string // ZSET member=user id, score=admission time (Redis clock, ms), or a sliding session's last renewal
	tokens  string // STRING tokens left in the bucket; unset means full
	seq     string // STRING arrival counter (INCR), the FIFO order of the line
	config  string // HASH refill_size, refill_interval_ms, session_ttl_ms, max_active, paused, abandon_after_ms, opens_at_ms, prequeue_from_ms
	tick    string // HASH next_at_ms (an interval after at_ms), at_ms, moved, abandoned, direct, draw_for, draw_seed, draw_count (see tick.lua)
	// history: LIST, one entry per ended interval, oldest first, written
	// by tick.lua and read by parseHistoryEntry. The one description of
	// its format: "at_ms:admitted:waiting:abandoned:arrivals:active:budget",
	// the interval's start (Redis clock, ms), its admissions (moved and
	// direct), the line at its end, the places dropped as abandoned at its
	// end, its arrivals (arrival numbers given, direct admissions, an
	// opening's participants placed), the active users at its end and its
	// budget (refill_size, or the effective refill while adapting).
	// Fields are only ever added at the end; entries written before carry
	// fewer (3 before abandonment, 4 before issue 22's, 6 before the
	// budget) and read as 0 for
	// the missing ones, and fields after those a reader knows are ignored.
	history string
	heard   string // ZSET member=waiting user id, score=when last heard (ms): abandonment
	// held: ZSET member=user id, score=arrival number: places that reached
	// the head unheard, set aside until they confirm or their deadline
	// passes (tick.lua), so they never block the places behind them.
	held string
	// stale: ZSET member=user id, score=the highest arrival number of the
	// user's credentials that no longer name its place (a leave, a
	// removal, a re-entry), kept until the head passes it: each replica
	// reads it with its snapshot and asks Redis for such credentials.
	stale string
	gone  string // ZSET member="<reason>:<user id>", score=when the place ended (ms), kept an hour
	draw  string // SET the participants of a scheduled opening's draw, until placed in the line
	// events: STREAM the webhooks' outbox (EventsKey), written only while
	// config's webhooks flag is 1 (emit, common.lua).
	events string
	// bulk: STREAM the webhooks' bulk outbox (BulkEventsKey), the same
	// but for a user's own leaving (emit_bulk), read after events.
	bulk string
	// admitted: HASH member=user id, value=admission time (ms), for the
	// sliding sessions renewed since they began (renew.lua): their entered
	// score is then the last renewal, and a pass names the start.
	admitted string
	// arrivals: ZSET member="at_ms:waiting:refill_size:interval_ms",
	// score=seq at an applied tick: the checkpoints that date a place by
	// its arrival number (tick.lua, "Line statistics"), kept back to the
	// one covering the head of the line.
	arrivals string
	// samples: LIST "at_ms:kind:value_ms:count", groups of like durations
	// measured at ticks (STAT_* kinds in common.lua), the last
	// SAMPLES_KEEP (tick.lua); the back office reads the last ten minutes.
	samples string
	// inside: HASH rounded time inside (ms) -> count, done.lua's since
	// the last tick, which folds them into samples.
	inside string
	// rate and pow prefix the per-client and per-place rate buckets
	// (STRING, the time the bucket is full again, expiring then) and the
	// marks of used proofs of work (expiring with the challenge), one key
	// each (enter.lua, status.lua, challenge.lua).
	rate, pow string
	// gen: HASH member=user id, value=the generation of the place's
	// credentials, only for places that moved to another device
	// (internal/handoff writes it; enter, status and leave refuse an older
	// credential). moved: ZSET member=user id, score=when it last moved
	// (ms), the last hour's moves, which replicas read so as to send such
	// places' status to Redis rather than answer it from their snapshot.
	gen, moved string
	// netPlaces prefixes a network's places in the line (ZSET member=user id,
	// score=arrival number, 0 in a draw; one key per network, expiring 2 h
	// after its last new place), and arriving is the queue's arrivals
	// over a sliding window (HASH w, n, p): the price of a place
	// (price.go, networks.lua).
	netPlaces, arriving string
	// seen prefixes the bitmaps of the networks seen in a window (STRING
	// of seenBits bits, one key per seenWindow, kept two windows): a
	// network's first place is only its bit there (price.go).
	seen string
	// unused is a key name no script reads or writes, given for a call's
	// key that does not apply (no client limit, no proof).
	unused string
}

// proof is the key that marks the proof of work of challenge id used.
func (k keys) proof(id string) string { return k.pow + id }

// KeyPrefix begins the name of every Redis key of queue, the queue's own
// and those of packages that keep more beside them (the audit log) or read
// them (the soak checker): "wr:{name}:", the name as a Cluster hash tag.
func KeyPrefix(queue string) string { return "wr:{" + queue + "}:" }

// EventsKey is the STREAM of queue's events for the site (webhooks):
// entries {type, at, subs[, settings]} written by the scripts that cause
// them (emit, common.lua) and delivered by internal/webhook.
func EventsKey(queue string) string { return KeyPrefix(queue) + "events" }

// BulkEventsKey is the STREAM of queue's events that anyone can cause at
// will (a user's own "left", emit_bulk in common.lua): the same entries as
// EventsKey's, bounded apart and delivered after them (issue 26.11).
func BulkEventsKey(queue string) string { return KeyPrefix(queue) + "events:bulk" }

// ConfigKey is queue's settings HASH, where internal/webhook keeps the
// queue's webhooks flag (emit, common.lua) and reads its webhook_url.
func ConfigKey(queue string) string { return KeyPrefix(queue) + "config" }

// GenKey is queue's HASH of the generations of places that moved to
// another device (member=user id, value=generation), and MovedKey its
// ZSET of the moves of the last hour (member=user id, score=when, ms):
// internal/handoff writes both, the scripts of enter, status and leave
// read the first.
func GenKey(queue string) string   { return KeyPrefix(queue) + "gen" }
func MovedKey(queue string) string { return KeyPrefix(queue) + "moved" }

// WaitingKey is queue's line (ZSET member=user id, score=arrival number)
// and DrawKey its scheduled opening's participants (SET): a hand-over
// (internal/handoff) moves only a place in one of them.
func WaitingKey(queue string) string { return KeyPrefix(queue) + "waiting" }
func DrawKey(queue string) string    { return KeyPrefix(queue) + "draw" }

func keysFor(queue string) keys {
	p := KeyPrefix(queue)
	return keys{
		waiting:   WaitingKey(queue),
		entered:   p + "entered",
		tokens:    p + "tokens",
		seq:       p + "seq",
		config:    p + "config",
		tick:      p + "tick",
		history:   p + "history",
		heard:     p + "heard",
		held:      p + "held",
		stale:     p + "stale",
		gone:      p + "gone",
		draw:      DrawKey(queue),
		admitted:  p + "admitted",
		arrivals:  p + "arrivals",
		samples:   p + "samples",
		inside:    p + "inside",
		events:    EventsKey(queue),
		bulk:      BulkEventsKey(queue),
		rate:      p + "rate:",
		pow:       p + "pow:",
		unused:    p + "unused",
		gen:       GenKey(queue),
		netPlaces: p + "netplaces:",
		seen:      p + "netseen:",
		arriving:  p + "arrival_rate",
		moved:     MovedKey(queue),
	}
}

// clientKey and placeKey are a call's rate buckets for op ("enter",
// "status" or "challenge": each has its own), or the unused key when the
// script is not to charge it (no limit, or quiet in the local stage). The
// address and the id are the key's tail: Redis keys are binary-safe, and
// ids are validated (ValidateUserID).
func (q *queueRef) clientKey(op string, c Caller) string {
	if c.clientCost == 0 {
		return q.keys.unused
	}
	return q.keys.rate + op + ":c:" + c.Client
}

// netKey is the rate bucket for op of c's network i (0: its /24 or /56,
// 1: its /48), or the unused key when the script is not to charge it.
// The tier's key tells the two apart ("/56", "/48").
func (q *queueRef) netKey(op string, c Caller, i int) string {
	if c.netCosts[i] == 0 {
		return q.keys.unused
	}
	return q.keys.rate + op + ":n:" + c.Networks[i]
}

// netPlacesKey is the ZSET of the places network holds in the line.
func (k keys) netPlacesKey(network string) string { return k.netPlaces + network }

// seenKeys are the bitmaps of the networks seen in the window of now and
// in the one before. Each replica names the window by its own clock: at a
// window's edge two replicas may briefly write different bitmaps, which
// at worst lets a network's second place there pass as a first.
func (k keys) seenKeys(now time.Time) (cur, prev string) {
	w := now.UnixMilli() / seenWindow.Milliseconds()
	return k.seen + strconv.FormatInt(w, 10), k.seen + strconv.FormatInt(w-1, 10)
}

func (q *queueRef) placeKey(op string, c Caller) string {
	if c.placeCost == 0 {
		return q.keys.unused
	}
	return q.keys.rate + op + ":p:" + c.User
}
