package rediskeys

import "slices"

// Key describes one key (or one family of keys) as data: the docs' key
// table is rendered from All (docs_test.go).
type Key struct {
	// Pattern is the key's name with "{q}" for the queue and "{…}" for
	// each other part a builder is given, e.g. "wr:{q}:netplaces:{network}".
	Pattern string
	Type    string // Redis type: STRING, HASH, LIST, SET, ZSET or STREAM
	Owner   string // the one package whose scripts or calls write it
	Doc     string // what it holds: one line of Markdown
	// build spells Pattern with the key's builder, given the placeholders
	// as its arguments, so a test holds Pattern and builder together.
	build func() string
}

// q is the queue placeholder: prefix("q") is "wr:{q}:", as the patterns
// read.
const q = "q"

// All is every key waitroom keeps in Redis, in the order of the docs'
// table: the queue's, then those of the capabilities beside it, then
// the keys of no queue. The slice is the caller's.
func All() []Key { return slices.Clone(registry) }

var registry = []Key{
	{"wr:{q}:waiting", "ZSET", OwnerQueue, "the line: member user id, score arrival number",
		func() string { return Waiting(q) }},
	{"wr:{q}:entered", "ZSET", OwnerQueue, "admitted users: score admission time (ms, Redis clock), or a sliding session's last renewal",
		func() string { return Entered(q) }},
	{"wr:{q}:rate:{op}:c:{client}", "STRING", OwnerQueue, "a client's rate bucket for `op` (enter, status or challenge): when it is full again (ms); expires then",
		func() string { return ClientRate(q, "{op}", "{client}") }},
	{"wr:{q}:rate:{op}:p:{user}", "STRING", OwnerQueue, "the same per place",
		func() string { return PlaceRate(q, "{op}", "{user}") }},
	{"wr:{q}:rate:{op}:n:{network}", "STRING", OwnerQueue, "the same per client network (IPv4 /24, IPv6 /56 or /48)",
		func() string { return NetworkRate(q, "{op}", "{network}") }},
	{"wr:{q}:heldback:{network}", "HASH", OwnerQueue, "`at` (the interval's tick) and `n`, the held places a client network brought back in it; expires two intervals after its last write",
		func() string { return HeldReturns(q, "{network}") }},
	{"wr:{q}:pow:{id}", "STRING", OwnerQueue, "a used proof-of-work challenge; expires with the challenge",
		func() string { return Proof(q, "{id}") }},
	{"wr:{q}:admitted", "HASH", OwnerQueue, "sliding sessions renewed since they began: member user id, value the admission's start (ms), which their pass names",
		func() string { return Admitted(q) }},
	{"wr:{q}:tokens", "STRING", OwnerQueue, "tokens left; unset means a full bucket",
		func() string { return Tokens(q) }},
	{"wr:{q}:seq", "STRING", OwnerQueue, "arrival counter (`INCR`)",
		func() string { return Seq(q) }},
	{"wr:{q}:config", "HASH", OwnerQueue, "the stored settings (`refill_size`, `refill_interval_ms`, `session_ttl_ms`, `max_active`, `paused`, " +
		"`abandon_after_ms`, `opens_at_ms`, `prequeue_from_ms`, `max_waiting`, `challenge_difficulty`, `title`, `message`, `webhook_url`; " +
		"the automatic rate's `adapt_enabled`, `origin_target_p95_ms`, `origin_max_error_rate`, `min_refill_size`, `origin_probe_url`, " +
		"and `refill_effective`, its last step while on); while a draw is sealed, `draw_commitment` (the SHA-256 of its seed, hex) and `draw_id` (its first 13 hex digits as a number); while a sale is closed, `closed_at_ms`, `closed_message` (JSON by language) and `reopens_at_ms` (close.lua); the outbox's `webhooks`, `webhooks_bulk_max` and `webhooks_dropped_*`, which the webhook workers set and take through the queue",
		func() string { return Config(q) }},
	{"wr:{q}:tick", "HASH", OwnerQueue, "`next_at_ms` (next interval), last tick's `at_ms`, `moved` and `abandoned`, `direct` admissions since, " +
		"`seq_at` and `placed` (arrivals), `budget` (what its interval admits), `draw_for`, `draw_seed`, `draw_commitment`, `draw_count`, `draw_placing`, `draw_lines`, `draw_n[:<lane>]` (the last draw, revealed), " +
		"`grace_until_ms` (after an outage, no place is dropped as abandoned before it); a `min_next_ms` left by a version older than `next_at_ms` is honoured once and deleted by the next tick",
		func() string { return Tick(q) }},
	{"wr:{q}:history", "LIST", OwnerQueue, "`at_ms:admitted:waiting:abandoned:arrivals:active:budget`, one per ended interval, at most 720 " +
		"(format: internal/engine/queue `keys.go`; older entries have fewer fields)",
		func() string { return History(q) }},
	{"wr:{q}:arrivals", "ZSET", OwnerQueue, "checkpoints that date a place by its arrival number: member `at_ms:waiting:budget:interval_ms`, " +
		"score the arrival counter at an applied tick; kept back to the head of the line",
		func() string { return Arrivals(q) }},
	{"wr:{q}:samples", "LIST", OwnerQueue, "`at_ms:kind:value_ms:count`: time in line (1), ETA error (2), time inside (3) measured at ticks, the last 10,000",
		func() string { return Samples(q) }},
	{"wr:{q}:inside", "HASH", OwnerQueue, "done.lua's times inside (two significant digits) → count, until the next tick folds them into `samples`",
		func() string { return Inside(q) }},
	{"wr:{q}:heard", "ZSET", OwnerQueue, "waiting users: member user id, score when last heard (ms)",
		func() string { return Heard(q) }},
	{"wr:{q}:held", "ZSET", OwnerQueue, "places set aside at the head until they confirm: member user id, score arrival number",
		func() string { return Held(q) }},
	{"wr:{q}:stale", "ZSET", OwnerQueue, "credentials that no longer name their place: member user id, score the highest such arrival number; trimmed as the head passes, at most 10,000 a tick",
		func() string { return Stale(q) }},
	{"wr:{q}:netplaces:{network}", "ZSET", OwnerQueue, "the places a network (IPv4 /24, IPv6 /56 or /48) holds from its second on, " +
		"with a stand-in `~` for the first: member user id, score arrival number; trimmed as the head passes, expiring 2 h after its last place",
		func() string { return NetPlaces(q, "{network}") }},
	{"wr:{q}:arrival_rate", "HASH", OwnerQueue, "the queue's arrivals over a sliding 10 s window (`w`, `n`, `p`): the price's pressure",
		func() string { return ArrivalRate(q) }},
	{"wr:{q}:draw", "SET", OwnerQueue, "a scheduled opening's participants, until the draw places them in the line",
		func() string { return Draw(q) }},
	{"wr:{q}:drawkeys", "ZSET", OwnerQueue, "their draw keys, every score 0 so in member order: member the draw key (HMAC-SHA256 of the user id keyed by the seed, 32 bytes), the SHA-256 of the user id (32 bytes) and the user id; emptied as the draw places them (docs/DRAW.md)",
		func() string { return DrawKeys(q) }},
	{"wr:{q}:drawlist", "LIST", OwnerQueue, "the last draw's list in place order: 64-byte entries, the draw key and the SHA-256 of the user id, served by `GET /api/v1/queues/{queue}/draw`",
		func() string { return DrawList(q) }},
	{"wr:{q}:drawseed", "STRING", OwnerQueue, "the seed of the draw the next opening makes (64 hex digits), until the tick reveals it at the opening; nothing that answers reads it before",
		func() string { return DrawSeed(q) }},
	{"wr:{q}:gone", "ZSET", OwnerQueue, "why places ended: member `<reason>:<user id>`, score when (ms); kept at least an hour (each record written retires up to two past the hour, each applied tick up to 10,000 more)",
		func() string { return Gone(q) }},
	{"wr:{q}:events", "STREAM", OwnerQueue, "the webhooks' outbox: entries `type`, `at` (ms), `subs` (up to 100 user ids), `settings`; " +
		"written only while `webhooks` = 1 in the config; consumer group `webhook` (internal/ops/webhook makes it, reads and acknowledges)",
		func() string { return Events(q) }},
	{"wr:{q}:events:bulk", "STREAM", OwnerQueue, "the same, for a user's own leaving only (`left` with `reason: \"left\"`), " +
		"read after `wr:{q}:events`; at most `webhooks_bulk_max` entries (10,000)",
		func() string { return BulkEvents(q) }},
	{"wr:{q}:gen", "HASH", OwnerQueue, "places that moved to another device: member user id, value the generation of its credentials " +
		"(move.lua); kept a week after the queue's last move",
		func() string { return Gen(q) }},
	{"wr:{q}:moved", "ZSET", OwnerQueue, "the last hour's moves: member user id, score when (ms) (move.lua); replicas read it (handoff.Tracker)",
		func() string { return Moved(q) }},
	{"wr:{q}:lane:{lane}:{part}", "ZSET", OwnerQueue, "a lane's own line keys (`part`: waiting, heard, held, stale, draw, drawkeys, drawlist, seq, arrivals, history), each of the type and content of the queue's key of that name",
		func() string { return Lane(q, "{lane}", "{part}") }},
	{"wr:{q}:lanes", "SET", OwnerQueue, "the lanes that may hold places: configured, or not yet empty",
		func() string { return Lanes(q) }},
	{"wr:{q}:schedule", "STRING", OwnerQueue, "the windows, JSON as `PUT /admin/v1/queues/{queue}/schedule` takes them; each applied at its start and undone at its end by windows.lua",
		func() string { return Schedule(q) }},
	{"wr:{q}:unused", "STRING", OwnerQueue, "never exists: given to a script for a key that does not apply (no limit, no proof)",
		func() string { return Unused(q) }},
	{"wr:{q}:codes", "HASH", OwnerQueue, "invitation codes: field a code's keyed digest (never the code), value `<uses left> <batch> <lane>`; redeem.lua spends a use",
		func() string { return Codes(q) }},
	{"wr:{q}:codes:batches", "HASH", OwnerQueue, "batches of invitation codes: `<batch>` (JSON), `<batch>:lane` (set once all its codes are stored), `<batch>:expires_ms`, `<batch>:used`, `<batch>:revoked_ms`",
		func() string { return CodeBatches(q) }},
	{"wr:{q}:events:dead", "STREAM", OwnerWebhook, "webhook deliveries given up after an hour, with their outbox `entry` id; at most ~10,000",
		func() string { return DeadEvents(q) }},
	{"wr:{q}:audit", "LIST", OwnerAudit, "the operators' changes of the queue: JSON entries, newest first",
		func() string { return Audit(q) }},
	{"wr:{q}:gate_fail_open", "HASH", OwnerFailopen, "what the gate let through unchecked while Redis was away: `requests`, `last_at_ms`",
		func() string { return GateFailOpen(q) }},
	{"wr:{q}:origin", "HASH", OwnerAutorate, "the site's pushed or the probe's report: `p95_ms`, `error_rate`, `source`, `at_ms`; a minute's life",
		func() string { return Origin(q) }},
	{"wr:{q}:origin:lease", "STRING", OwnerAutorate, "the probe's holder's token, a few seconds' life",
		func() string { return OriginLease(q) }},
	{"wr:{q}:handoff:live", "HASH", OwnerHandoff, "live hand-overs: `t:<sha256 of token>` and `c:<sha256 of code>` → member, generation, expiry; " +
		"`m:<member>` → its two fields",
		func() string { return HandoffLive(q) }},
	{"wr:{q}:handoff:expires", "ZSET", OwnerHandoff, "when each member's hand-over expires (ms), swept by every hand-over call",
		func() string { return HandoffExpires(q) }},
	{"wr:{q}:handoff:tries:q", "STRING", OwnerHandoff, "failed hand-over attempts by code in the queue's current window",
		func() string { return HandoffQueueTries(q) }},
	{"wr:{q}:handoff:tries:c:{client}", "STRING", OwnerHandoff, "a client's failed hand-over attempts (codes and tokens) in its current window",
		func() string { return HandoffClientTries(q, "{client}") }},
	{"wr:{q}:handoff:unused", "STRING", OwnerHandoff, "never exists: the client counter of a call with no client",
		func() string { return HandoffUnused(q) }},
	{"wr:{q}:handover:{id}", "STRING", OwnerPassledger, "pass `id`'s pass link (`?wr_pass=`) was exchanged; until the pass expires",
		func() string { return PassLinkUsed(q, "{id}") }},
	{"wr:{q}:admclients:{start}:{member}", "SET", OwnerPassledger, "the client networks an admission's passes were used from; " +
		"until its last pass expires",
		func() string { return AdmissionClients(q, "{start}", "{member}") }},
	{"wr:{q}:paid:{minute}", "HASH", OwnerPaid, "what visitors paid in one minute (Unix minutes), every replica's counts added: `p:<bits>` places made with a proof of that many bits, " +
		"`a:<bits>` challenges asked at that many, `h:asked`, `h:passed`, `h:failed`, `h:unavailable` human checks; expires after 15 minutes",
		func() string { return Paid(q, "{minute}") }},
	{"wr:{q}:codeguess:{who}", "HASH", OwnerLockout, "wrong invitation codes of an address (IPv6: its /64) or a network (`n:<prefix>`) and its lock, as `wr:lockout:{client}`",
		func() string { return CodeGuesses(q, "{who}") }},
	{"wr:secrets", "HASH", OwnerSecrets, "generated `place_secret` and `pass_signing_key` (PEM) when none is configured; not a queue's key",
		func() string { return Secrets }},
	{"wr:lockout:{client}", "HASH", OwnerLockout, "a client's failed authentications (`fails`, `window_ends_ms`, `locked_until_ms`, `strikes`; IPv6: its /64); not a queue's key",
		func() string { return Lockout("{client}") }},
	{"wr:human:{sha256}", "STRING", OwnerHumanCheck, "a human check's token, used: named by its SHA-256 (hex), never the token; set before the provider is asked, lifted if it could not judge; kept 10 minutes, longer than a provider keeps a token valid; not a queue's key",
		func() string { return HumanToken("{sha256}") }},
	{"wr:{~admin}:tokens", "HASH", OwnerAPIToken, "the admin API's tokens: field token id, value its JSON record (name, role, queues, times, the secret's keyed hash, never the secret)",
		func() string { return APITokens }},
	{"wr:{~admin}:tokens:expiry", "ZSET", OwnerAPIToken, "when each API token expires: member token id, score ms (Redis clock); expired tokens are swept at each create and list",
		func() string { return APITokenExpiry }},
	{"wr:{~admin}:tokens:used", "HASH", OwnerAPIToken, "when each API token was last used: field token id, value ms (Redis clock), written at most once a second per replica",
		func() string { return APITokenUsed }},
	{"wr:{~admin}:session:{id}", "HASH", OwnerSession, "a person's sign-in to the back office: `rec` (JSON: name, grants), `person`, `abs_ms` (its absolute end); expires after the idle timeout, renewed on use up to the absolute one",
		func() string { return Session("{id}") }},
	{"wr:{~admin}:person:{name}", "SET", OwnerSession, "the sign-ins of one person (their e-mail, or subject), so an admin can end them all",
		func() string { return PersonSessions("{name}") }},
	{"wr:{~admin}:signin:{state}", "STRING", OwnerSession, "a sign-in's state, spent: set at its one use, so a replayed state is refused; kept 10 minutes, as long as a state lives (the rest of a sign-in is sealed in the browser's cookie)",
		func() string { return SignIn("{state}") }},
}
