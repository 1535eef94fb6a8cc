// Package rediskeys is the one place that names waitroom's Redis keys.
//
// Each key has one small builder below, with its Redis type, its owner
// (the one package whose scripts or calls write it; others may read it)
// and what it holds. Every other package asks this one for a key name and
// passes it to its scripts through KEYS: no script and no other package
// spells a key. All lists every key as data, from which the key table of
// docs/ARCHITECTURE.md is generated (docs_test.go).
//
// Every key of a queue begins "wr:{q}:", the queue's name as a Cluster
// hash tag, so that all of a queue's keys live in one slot and a script
// may touch them together. The strings are the stored data's names: they
// never change (keys_test.go pins each one byte for byte), or a deployed
// waitroom would lose its state on upgrade.
//
// This package imports nothing of waitroom's, so that any package can
// ask it.
package rediskeys

// prefix begins the name of every key of queue q: "wr:{q}:".
func prefix(q string) string { return "wr:{" + q + "}:" }

// Owners of keys: the package whose scripts or calls write each.
const (
	OwnerQueue      = "internal/engine/queue"
	OwnerHandoff    = "internal/trust/handoff"
	OwnerAutorate   = "internal/ops/autorate"
	OwnerAudit      = "internal/backoffice/audit"
	OwnerFailopen   = "internal/gate/failopen"
	OwnerPassledger = "internal/trust/passledger"
	OwnerWebhook    = "internal/ops/webhook"
	OwnerSecrets    = "internal/trust/secrets"
	OwnerLockout    = "internal/backoffice/lockout"
	OwnerAPIToken   = "internal/backoffice/apitoken"
	OwnerSession    = "internal/backoffice/adminsession"
	OwnerHumanCheck = "internal/trust/humancheck"
	OwnerPaid       = "internal/ops/paid"
)

// --- internal/engine/queue: the line, its sessions, its settings and defences.

// Waiting is q's line. ZSET member=user id, score=arrival number (Seq).
// Owner: queue.
func Waiting(q string) string { return prefix(q) + "waiting" }

// Entered is q's admitted users. ZSET member=user id, score=admission
// time (Redis clock, ms), or a sliding session's last renewal. Owner: queue.
func Entered(q string) string { return prefix(q) + "entered" }

// Tokens is q's bucket. STRING tokens left; unset means full. Owner: queue.
func Tokens(q string) string { return prefix(q) + "tokens" }

// Seq is q's arrival counter (INCR), the line's FIFO order. STRING.
// Owner: queue.
func Seq(q string) string { return prefix(q) + "seq" }

// Config is q's stored settings. HASH field=setting. Owner: queue
// (settings.lua; the outbox's switch webhooks, webhooks_bulk_max and drop
// counts webhooks_dropped_* through Store.SetOutbox and TakeOutboxDrops,
// which internal/ops/webhook calls).
func Config(q string) string { return prefix(q) + "config" }

// Tick is q's interval state. HASH next_at_ms, at_ms, moved, abandoned,
// direct, seq_at, placed, budget, draw_for, draw_seed, draw_commitment,
// draw_count, draw_placing, draw_lines, draw_n[:<lane>] (the last draw),
// grace_until_ms (tick.lua). Owner: queue.
func Tick(q string) string { return prefix(q) + "tick" }

// History is q's ended intervals, oldest first, at most 720. LIST of
// "at_ms:admitted:waiting:abandoned:arrivals:active:budget"; fields are
// only ever added at the end (internal/engine/queue keys.go says how older
// entries read). Owner: queue.
func History(q string) string { return prefix(q) + "history" }

// Heard is when each waiting user was last heard. ZSET member=user id,
// score=ms: abandonment. Owner: queue.
func Heard(q string) string { return prefix(q) + "heard" }

// Held is the places set aside at the head until they confirm. ZSET
// member=user id, score=arrival number. Owner: queue.
func Held(q string) string { return prefix(q) + "held" }

// Stale is the credentials that no longer name their place. ZSET
// member=user id, score=the highest such arrival number. Owner: queue.
func Stale(q string) string { return prefix(q) + "stale" }

// Gone is why places ended. ZSET member="<reason>:<user id>", score=when
// (ms), an hour kept. Owner: queue.
func Gone(q string) string { return prefix(q) + "gone" }

// Draw is a scheduled opening's participants, until the draw places them
// in the line. SET of user ids. Owner: queue.
func Draw(q string) string { return prefix(q) + "draw" }

// DrawKeys is the draw keys of a scheduled opening's participants, in
// their order: ZSET, every score 0, so ordered by member, which is the
// participant's draw key (HMAC-SHA256(seed, user id), 32 bytes), the
// SHA-256 of the user id (32 bytes) and the user id. Emptied as the draw
// places them. Owner: queue.
func DrawKeys(q string) string { return prefix(q) + "drawkeys" }

// DrawList is the last draw's list, in place order: LIST of 64-byte
// entries, the draw key and the SHA-256 of the user id (no user id), the
// i-th the place i. Served by GET /api/v1/queues/{queue}/draw. Owner: queue.
func DrawList(q string) string { return prefix(q) + "drawlist" }

// DrawSeed is the seed of the draw the next opening makes: STRING, 64 hex
// digits, until the tick reveals it (copied to Tick's draw_seed) at the
// opening. Never read by anything that answers before then. Owner: queue.
func DrawSeed(q string) string { return prefix(q) + "drawseed" }

// Admitted is the sliding sessions renewed since they began. HASH
// member=user id, value=the admission's start (ms). Owner: queue.
func Admitted(q string) string { return prefix(q) + "admitted" }

// Arrivals is the checkpoints that date a place by its arrival number.
// ZSET member="at_ms:waiting:budget:interval_ms", score=Seq at an applied
// tick. Owner: queue.
func Arrivals(q string) string { return prefix(q) + "arrivals" }

// Samples is durations measured at ticks. LIST "at_ms:kind:value_ms:count",
// the last 10,000. Owner: queue.
func Samples(q string) string { return prefix(q) + "samples" }

// Inside is done.lua's times inside since the last tick. HASH rounded
// ms -> count. Owner: queue.
func Inside(q string) string { return prefix(q) + "inside" }

// Events is q's webhook outbox. STREAM entries type, at, subs[, settings],
// consumer group "webhook". Owner: queue (its scripts add entries);
// internal/ops/webhook makes the group, reads and acknowledges.
func Events(q string) string { return prefix(q) + "events" }

// BulkEvents is q's outbox for a user's own leaving, read after Events.
// STREAM, as Events. Owner: queue; read as Events.
func BulkEvents(q string) string { return prefix(q) + "events:bulk" }

// Gen is the generation of the credentials of places that moved to
// another device. HASH member=user id, value=generation. Owner: queue
// (move.lua); enter, status and leave refuse an older credential.
func Gen(q string) string { return prefix(q) + "gen" }

// Moved is the last hour's moves of a place to another device. ZSET
// member=user id, score=when (ms). Owner: queue (move.lua); read by
// internal/trust/handoff's Tracker.
func Moved(q string) string { return prefix(q) + "moved" }

// ArrivalRate is q's arrivals over a sliding window. HASH w, n, p: the
// price of a place. Owner: queue.
func ArrivalRate(q string) string { return prefix(q) + "arrival_rate" }

// NetPlaces is the places network holds in q's line. ZSET member=user
// id, score=arrival number, expiring 2 h after its last place. Owner: queue.
func NetPlaces(q, network string) string { return prefix(q) + "netplaces:" + network }

// ClientRate, PlaceRate and NetworkRate are the rate buckets of call op
// ("enter", "status", "challenge") per client address, per place and per
// client network. STRING the time the bucket is full again (ms), expiring
// then. Owner: queue.
func ClientRate(q, op, client string) string { return prefix(q) + "rate:" + op + ":c:" + client }
func PlaceRate(q, op, user string) string    { return prefix(q) + "rate:" + op + ":p:" + user }
func NetworkRate(q, op, network string) string {
	return prefix(q) + "rate:" + op + ":n:" + network
}

// Proof marks the proof of work of challenge id used. STRING, expiring
// with the challenge. Owner: queue.
func Proof(q, id string) string { return prefix(q) + "pow:" + id }

// HeldReturns counts the held places a client network (queue.Caller's
// Networks[0], else its address) brought back into the line in the
// interval in progress (status.lua). HASH at (the at_ms of the tick that
// opened the interval), n; expires two intervals after its last write.
// Owner: queue.
func HeldReturns(q, network string) string { return prefix(q) + "heldback:" + network }

// Unused is a key no script reads or writes, given for a call's key that
// does not apply (no limit, no proof). Never exists. Owner: queue.
func Unused(q string) string { return prefix(q) + "unused" }

// Lane is the key of one of lane's own line keys in q: a lane
// is a line of its own, "wr:{q}:lane:{lane}:{part}", part one of waiting,
// heard, held, stale, draw, drawkeys, drawlist, seq, arrivals, history, with the type and
// content of q's key of that name. Owner: queue.
func Lane(q, lane, part string) string { return prefix(q) + "lane:" + lane + ":" + part }

// Lanes is the lanes of q that may hold places: configured, or holding
// some still. SET of lane names; enter.lua adds a lane's name as it places
// someone there, tick.lua removes a lane no longer configured once its
// line is empty. Owner: queue.
func Lanes(q string) string { return prefix(q) + "lanes" }

// Schedule is q's windows. STRING, JSON as PUT
// /admin/v1/queues/{queue}/schedule takes it; windows.lua applies each
// window at its start and undoes it at its end. Owner: queue.
func Schedule(q string) string { return prefix(q) + "schedule" }

// Codes is q's invitation codes. HASH field a code's keyed digest
// (internal/trust/invite: never the code), value "<uses left> <batch>
// <lane>"; redeem.lua spends a use as it moves a place into the lane.
// Owner: queue.
func Codes(q string) string { return prefix(q) + "codes" }

// CodeBatches is q's batches of invitation codes. HASH fields "<batch>"
// (JSON: the batch as the admin API lists it), "<batch>:lane" (present
// once the batch's codes are all stored: until then they redeem
// nothing), "<batch>:expires_ms" (0: never), "<batch>:used" and
// "<batch>:revoked_ms". Owner: queue.
func CodeBatches(q string) string { return prefix(q) + "codes:batches" }

// CodeGuesses is the wrong invitation codes of who (an address as
// clientip.Key counts it, or a network "n:<prefix>") in q, and its lock:
// lockout's HASH. Owner: lockout.
func CodeGuesses(q, who string) string { return prefix(q) + "codeguess:" + who }

// --- the capabilities beside the queue, each in its own keys.

// DeadEvents is q's webhook deliveries given up. STREAM, at most ~10,000.
// Owner: webhook.
func DeadEvents(q string) string { return prefix(q) + "events:dead" }

// Audit is q's log of operators' changes. LIST of JSON entries, newest
// first. Owner: audit.
func Audit(q string) string { return prefix(q) + "audit" }

// GateFailOpen is what q's gate let through unchecked while Redis was
// away, over every replica. HASH requests, last_at_ms. Owner: failopen.
func GateFailOpen(q string) string { return prefix(q) + "gate_fail_open" }

// Origin is q's report of the order page's health. HASH p95_ms,
// error_rate, source, at_ms; a minute's life. Owner: autorate.
func Origin(q string) string { return prefix(q) + "origin" }

// OriginLease is the lease of q's origin probe. STRING the holder's
// token, a few seconds' life. Owner: autorate.
func OriginLease(q string) string { return prefix(q) + "origin:lease" }

// HandoffLive is q's live hand-overs. HASH t:<sha256 of token> and
// c:<sha256 of code> -> "member\ngeneration\nexpires"; m:<member> -> its
// two fields. Owner: handoff.
func HandoffLive(q string) string { return prefix(q) + "handoff:live" }

// HandoffExpires is when each member's hand-over expires. ZSET
// member=user id, score=ms. Owner: handoff.
func HandoffExpires(q string) string { return prefix(q) + "handoff:expires" }

// HandoffQueueTries and HandoffClientTries count failed hand-over
// attempts in the current window: by code in q, and by client. STRING
// counter, expiring with the window. Owner: handoff.
func HandoffQueueTries(q string) string { return prefix(q) + "handoff:tries:q" }
func HandoffClientTries(q, client string) string {
	return prefix(q) + "handoff:tries:c:" + client
}

// HandoffUnused is a key the hand-over scripts never touch, given for a
// client counter that does not apply. Owner: handoff.
func HandoffUnused(q string) string { return prefix(q) + "handoff:unused" }

// PassLinkUsed marks pass id's pass link (?wr_pass=) exchanged. STRING,
// until the pass expires. Owner: passledger.
func PassLinkUsed(q, id string) string { return prefix(q) + "handover:" + id }

// AdmissionClients is the client networks an admission's passes were
// used from: start is its start (ms, decimal), member its user id. SET,
// until its last pass expires. Owner: passledger.
func AdmissionClients(q, start, member string) string {
	return prefix(q) + "admclients:" + start + ":" + member
}

// Paid is what q's visitors paid in one minute (minute: Unix minutes, on
// the replica's clock), every replica's counts added. HASH field
// "<kind>:<bits>" (kind "p" a place made with a proof of that many bits,
// "a" a challenge asked at that many) or "h:<result>" (a human check
// asked, passed, failed, unavailable) -> count; expires after 15 minutes.
// Owner: paid.
func Paid(q, minute string) string { return prefix(q) + "paid:" + minute }

// --- keys of no queue: no hash tag, each only ever used alone.

// Secrets is the generated secrets. HASH place_secret, pass_signing_key
// (PEM), when none is configured. Owner: secrets.
const Secrets = "wr:secrets"

// Lockout is client's failed authentications and lock (client as
// clientip.Key formats it). HASH, see lockout's attempt.lua. Owner: lockout.
func Lockout(client string) string { return "wr:lockout:" + client }

// HumanToken marks a human check's token used, named by sum, the hex
// SHA-256 of the token (never the token itself). STRING "1", kept 10
// minutes: longer than a provider keeps a token valid. Owner: humancheck.
func HumanToken(sum string) string { return "wr:human:" + sum }

// --- the back office's credentials: every key under the hash tag
// {~admin}, so that a script may touch several of them on a Cluster. A
// queue's name cannot hold "~", so no queue's keys can meet these.

// adminPrefix begins the name of every key of the back office's
// credentials.
const adminPrefix = "wr:{~admin}:"

// APITokens is the admin API's tokens. HASH field token id, value its
// JSON record (name, grant, times, keyed hash of the secret). Owner:
// apitoken.
const APITokens = adminPrefix + "tokens"

// APITokenExpiry is when each token expires. ZSET member token id, score
// expiry (ms, Redis clock). Owner: apitoken.
const APITokenExpiry = adminPrefix + "tokens:expiry"

// APITokenUsed is when each token was last used. HASH field token id,
// value ms (Redis clock). Owner: apitoken.
const APITokenUsed = adminPrefix + "tokens:used"

// Session is a person's sign-in to the back office. HASH of rec (JSON),
// person and abs_ms, expiring after the idle timeout (renewed on use, never past the
// absolute one). Owner: adminsession.
func Session(id string) string { return adminPrefix + "session:" + id }

// PersonSessions is the sign-ins of one person (their name, as the audit
// log names them), so that an admin can end them all. SET of session ids.
// Owner: adminsession.
func PersonSessions(person string) string { return adminPrefix + "person:" + person }

// SignIn marks a sign-in's state spent, so a replayed one is refused.
// STRING "1", for as long as the state could live (10 minutes). Owner:
// adminsession.
func SignIn(state string) string { return adminPrefix + "signin:" + state }
