package queue

import (
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// keys holds the Redis keys of one queue, named by internal/infra/rediskeys
// (which gives each one's type and what it holds). Every key carries the
// queue name as a hash tag, so all of them live in one Cluster slot and a
// script may touch them together. Scripts get them through KEYS and never
// build key names themselves.
type keys struct {
	name string // the queue, for the keys built per call (rate buckets, networks, proofs)

	waiting, entered, tokens, seq, config, tick string
	// history: LIST, one entry per ended interval, oldest first, written
	// by tick.lua and read by parseHistoryEntry. The one description of
	// its format: "at_ms:admitted:waiting:abandoned:arrivals:active:budget",
	// the interval's start (Redis clock, ms), its admissions (moved and
	// direct), the line at its end, the places dropped as abandoned at its
	// end, its arrivals (arrival numbers given, direct admissions, an
	// opening's participants placed), the active users at its end and its
	// budget (refill_size, or the effective refill while adapting).
	// Fields are only ever added at the end; entries written before carry
	// fewer (3 before abandonment, 4 before the line statistics', 6 before the
	// budget) and read as 0 for
	// the missing ones, and fields after those a reader knows are ignored.
	history                        string
	heard, held, stale, gone, draw string
	// drawKeys and drawList are the line's draw keys and its last draw's
	// list, drawSeed the queue's sealed seed (rediskeys.DrawKeys,
	// DrawList, DrawSeed; docs/DRAW.md).
	drawKeys, drawList, drawSeed          string
	events, bulk, admitted, arrivals      string
	samples, inside, gen, moved, arriving string
	// lane is the line's lane ("": the general lane); lanes and schedule
	// are the queue's (rediskeys.Lanes, Schedule).
	lane, lanes, schedule string
	// codes and codeBatches are the queue's invitation codes
	// (rediskeys.Codes, CodeBatches; codes.go).
	codes, codeBatches string
	// laneHistory is a lane's own history (the format above), "" for the
	// general lane, whose intervals the queue's history counts in full.
	laneHistory string
	// unused is a key name no script reads or writes, given for a call's
	// key that does not apply (no client limit, no proof).
	unused string
}

// proof is the key that marks the proof of work of challenge id used.
func (k keys) proof(id string) string { return rediskeys.Proof(k.name, id) }

func keysFor(queue string) keys {
	return keys{
		name:     queue,
		waiting:  rediskeys.Waiting(queue),
		entered:  rediskeys.Entered(queue),
		tokens:   rediskeys.Tokens(queue),
		seq:      rediskeys.Seq(queue),
		config:   rediskeys.Config(queue),
		tick:     rediskeys.Tick(queue),
		history:  rediskeys.History(queue),
		heard:    rediskeys.Heard(queue),
		held:     rediskeys.Held(queue),
		stale:    rediskeys.Stale(queue),
		gone:     rediskeys.Gone(queue),
		draw:     rediskeys.Draw(queue),
		drawKeys: rediskeys.DrawKeys(queue),
		drawList: rediskeys.DrawList(queue),
		drawSeed: rediskeys.DrawSeed(queue),
		admitted: rediskeys.Admitted(queue),
		arrivals: rediskeys.Arrivals(queue),
		samples:  rediskeys.Samples(queue),
		inside:   rediskeys.Inside(queue),
		events:   rediskeys.Events(queue),
		bulk:     rediskeys.BulkEvents(queue),
		unused:   rediskeys.Unused(queue),
		gen:      rediskeys.Gen(queue),
		arriving: rediskeys.ArrivalRate(queue),
		moved:    rediskeys.Moved(queue),
		lanes:    rediskeys.Lanes(queue),
		schedule: rediskeys.Schedule(queue),

		codes:       rediskeys.Codes(queue),
		codeBatches: rediskeys.CodeBatches(queue),
	}
}

// keysForLine is keysFor for lane's line ("": the general lane, keysFor):
// the line's own keys are the lane's (rediskeys.Lane), the rest the
// queue's.
func keysForLine(queue, lane string) keys {
	k := keysFor(queue)
	if lane == "" {
		return k
	}
	part := func(p string) string { return rediskeys.Lane(queue, lane, p) }
	k.lane = lane
	k.waiting, k.heard, k.held, k.stale = part("waiting"), part("heard"), part("held"), part("stale")
	k.draw, k.seq, k.arrivals, k.laneHistory = part("draw"), part("seq"), part("arrivals"), part("history")
	k.drawKeys, k.drawList = part("drawkeys"), part("drawlist")
	return k
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
	return rediskeys.ClientRate(q.keys.name, op, c.Client)
}

// netKey is the rate bucket for op of c's network i (0: its /24 or /56,
// 1: its /48), or the unused key when the script is not to charge it.
// The tier's key tells the two apart ("/56", "/48").
func (q *queueRef) netKey(op string, c Caller, i int) string {
	if c.netCosts[i] == 0 {
		return q.keys.unused
	}
	return rediskeys.NetworkRate(q.keys.name, op, c.Networks[i])
}

// netPlacesKey is the ZSET of the places network holds in the line.
func (k keys) netPlacesKey(network string) string { return rediskeys.NetPlaces(k.name, network) }

// heldKey is the counter of the held places c's network brought back this
// interval (Limits.HeldReturnPerTick): its Networks[0], else its Client
// address; with neither, the unused key and 0 (not counted).
func (q *queueRef) heldKey(c Caller) (string, int) {
	network := c.Networks[0]
	if network == "" {
		network = c.Client
	}
	if network == "" {
		return q.keys.unused, 0
	}
	return rediskeys.HeldReturns(q.keys.name, network), 1
}

func (q *queueRef) placeKey(op string, c Caller) string {
	if c.placeCost == 0 {
		return q.keys.unused
	}
	return rediskeys.PlaceRate(q.keys.name, op, c.User)
}
