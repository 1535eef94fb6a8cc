package queue

import (
	"encoding/json"
	"time"
)

// The values the store takes and gives: settings, callers, tickets and
// the operator's snapshots. The scripts' replies become these in reply.go.

// Status is where a user stands in a queue.
type Status string

// The statuses a Ticket can carry.
const (
	Entered    Status = "ENTERED"
	Waiting    Status = "WAITING"
	NotWaiting Status = "NOT_WAITING"
	// NotOpen answers an enter before a scheduled opening's pre-queue
	// window: nobody can join yet (the API answers it as an error).
	NotOpen Status = "NOT_OPEN"
	// Closed: the operator closed the sale (Store.Close). Anyone not
	// inside is told so, whether the place is still in the line or was
	// dropped (ReasonClosed); admitted people keep their sessions.
	Closed Status = "CLOSED"
)

// Reasons a user holds no place any more (Ticket.Reason), kept for an
// hour after the place ended.
const (
	ReasonAbandoned = "abandoned" // not heard from for abandon_after when the line reached them
	ReasonLeft      = "left"      // left the line, or gave up the admission
	ReasonExpired   = "expired"   // the admission's session TTL ran out
	ReasonRemoved   = "removed"   // the operator removed them
	ReasonDone      = "done"      // the order page said they were done
	// ReasonMoved: the place moved to another device (internal/trust/handoff);
	// only ever the answer to the older device's credential (ErrMoved).
	ReasonMoved = "moved"
	// ReasonClosed: the sale was closed (sold out) and the place dropped.
	ReasonClosed = "closed"
)

// Settings are one queue's admission settings.
type Settings struct {
	RefillSize     int           `setting:"refill_size"`        // users admitted per interval
	RefillInterval time.Duration `setting:"refill_interval_ms"` // time between ticks
	SessionTTL     time.Duration `setting:"session_ttl_ms"`     // how long an admission stays valid
	// SessionMax turns on sliding sessions (0: off): each successful pass
	// check (Current) renews the admission for SessionTTL from then, never
	// beyond SessionMax after it began. At least SessionTTL.
	SessionMax time.Duration
	// Limits are the rate limits of enter and status calls (a replica's
	// setting, the same for every queue; zero: none).
	Limits Limits
	// Price is what a place costs a network that already holds some, in
	// proof of work (price.go; a replica's setting; zero: no price).
	Price Price
	// MaxActive caps the admissions that have not ended (0: no cap).
	MaxActive int `setting:"max_active"`
	// MaxWaiting caps the line: beyond it a newcomer's enter is refused
	// with ErrQueueFull (0: no cap). Set live (Update), not a default.
	MaxWaiting int `setting:"max_waiting"`
	// ChallengeDifficulty is the proof of work asked before entering, in
	// leading zero bits (0: none). Set live (Update), not a default.
	ChallengeDifficulty int `setting:"challenge_difficulty"`
	// AbandonAfter is how long a waiting user may go unheard (no enter or
	// status) before the tick drops the place when it reaches the head,
	// without spending a token on it (0: never).
	AbandonAfter time.Duration `setting:"abandon_after_ms"`
	// Lanes are the lanes a queue is seeded with (WAITROOM_LANES; none:
	// one line).
	Lanes Lanes `setting:"lanes"`
	// Adapt lets the order page's health drive the rate (internal/ops/autorate):
	// the defaults a queue is seeded with.
	Adapt Adapt
}

// Adapt are a queue's settings for the controller that lets the order
// page's health drive the rate (internal/ops/autorate). Off, the
// budget of every interval is refill_size.
type Adapt struct {
	Enabled bool `setting:"adapt_enabled"`
	// TargetP95 is origin_target_p95_ms: over it the effective refill
	// drops (0: latency not checked).
	TargetP95 time.Duration `setting:"origin_target_p95_ms"`
	// MaxErrorRate is origin_max_error_rate, 0..1 (0: errors not checked).
	MaxErrorRate float64 `setting:"origin_max_error_rate"`
	// MinRefill is min_refill_size, the floor of the effective refill
	// (0: 1).
	MinRefill int `setting:"min_refill_size"`
	// ProbeURL is origin_probe_url, polled by one replica at a time for a
	// forward-auth or SDK deployment ("": none).
	ProbeURL string `setting:"origin_probe_url"`
}

// AdaptState is a queue's controller settings with what it steers: the
// operator's refill_size (the ceiling) and the effective refill the next
// tick starts from (the budget: refill_size when off or not yet stored).
type AdaptState struct {
	Adapt
	RefillSize      int
	RefillEffective int
}

// Limit is a rate limit: Rate calls a second on average, Burst at once. A
// zero Rate is no limit.
type Limit struct {
	Rate  float64
	Burst int
}

// Limits are a replica's rate limits, the same on every queue.
type Limits struct {
	EnterPerClient, EnterPerPlace   Limit
	StatusPerClient, StatusPerPlace Limit
	// EnterPerNetwork and EnterPerSite limit enter (and, in buckets of
	// their own, challenge) per wider network of the client as well
	// (Caller.Networks): the IPv4 /24 or IPv6 /56, and the IPv6 /48, so
	// that walking the addresses of a block buys no fresh budgets.
	EnterPerNetwork, EnterPerSite Limit
	// HeldReturnPerTick is how many held places (set aside at the head
	// until their holder asks, tick.lua) one client network brings back
	// into the line per interval (0: no limit). A place asking beyond it
	// stays held, is answered where it would stand, and comes back on a
	// later ask, at its own arrival number: one address asking for many
	// parked places at once cannot push everyone behind them back at
	// once. The network is the caller's Networks[0], else its Client;
	// a caller with neither is not limited.
	HeldReturnPerTick int
}

// Caller is one enter or status call, with what the defences check.
type Caller struct {
	User string
	// Client names the caller's budget in the per-client rate limits
	// (clientip.Key: its address, an IPv6 one's /64); empty, no limit
	// applies (the service's own checks, tests).
	Client string
	// Networks are the client's wider networks (clientip.TiersOf): the
	// IPv4 /24 or IPv6 /56, then the IPv6 /48 ("": none). Each is a budget
	// of its own in the enter limits (Limits.EnterPerNetwork, EnterPerSite)
	// and counts the places it holds, which set the price of its next one
	// (price.go). Unset, only Client's limit applies.
	Networks [2]string
	// Pricing says how the price of a place applies to the caller
	// (price.go): by the places of its Networks (the default), not at all
	// (an account, which holds one place whatever its network), or at the
	// ceiling for every place (a network of the hosting class).
	Pricing Pricing
	// Human says the caller passed the queue's human check for this
	// enter (its token verified by the provider, once): no proof of work
	// is asked of it.
	Human bool
	// Proved says the caller proved the place (a credential or, in load
	// tests, a plain id): the per-place limit applies.
	Proved bool
	// Proof is the proof of work an enter brings (zero: none).
	Proof Proof
	// Seq is the arrival number the caller's place credential carries
	// (Ticket.Seq; 0: none): a status of a place far from the head is
	// then answered from the replica's snapshot (snapshot.go).
	Seq int64
	// Credential says the caller proves the place with a place
	// credential, of generation Gen. Moving the place to another device
	// (internal/trust/handoff) makes the place's generation higher, and a call
	// with an older credential is refused with ErrMoved in the script
	// that would act on it. Without a credential (the service's own
	// checks, a site's join token, a plain id) no generation is checked.
	Credential bool
	Gen        int64
	// Account is the site account the caller's member id is a place of
	// (a join token's sub; "": none): an account holds one place per
	// queue, so its enter is refused with ErrPlaceInOtherLine while it
	// holds one in another of the queue's lines (Store.Enter), which sets
	// it for a join.
	Account string

	// others are the lines other than the caller's own in which Account
	// may hold a place, for enter.lua to look in (Store.otherLines).
	others []*queueRef

	// clientCost and placeCost are what the script charges the shared
	// buckets (0: not asked), set by the store's local stage (local.go).
	clientCost, placeCost int
	// netCosts are what the script charges the Networks' shared buckets.
	netCosts [2]int
	// first says the call is its Networks' first place through this
	// replica lately, free (seen.go); seen, for a later one, which of
	// them placed someone lately.
	first   bool
	seen    [2]bool
	netHash [2]uint64 // the Networks' seenHash, as look computed them
}

// gen is the generation the scripts check the caller's credential
// against (keep_current, common_places.lua): -1 for none.
func (c Caller) gen() int64 {
	if !c.Credential {
		return -1
	}
	return c.Gen
}

// Proof is a solved, checked proof-of-work challenge (package challenge
// checks the solution; the store only makes it single-use).
type Proof struct {
	ID         string    // the challenge's unique id
	Difficulty int       // the leading zero bits the solution has
	Expires    time.Time // when the challenge stops being accepted
}

// Entry is one enter (Store.Enter), the caller's identity already
// established.
type Entry struct {
	Caller
	// Join says a site's join token named the user, who may then hold a
	// place from another device already: kept as it is.
	Join bool
	// Replaces is a place the caller held in the queue under another id
	// (an anonymous place, before a join; "": none). It is given up once
	// the enter is through, so that it does not wait on, unclaimed, and
	// take an admission later.
	Replaces string
}

// Ticket is a user's place, as the scripts computed it at one instant.
type Ticket struct {
	Status Status
	// Reason says why a NotWaiting user's place ended, when known.
	Reason   string
	Position int64 // 1-based place in the line; 0 unless Waiting
	Waiting  int64 // people in the line
	// TicksAhead is how many full refills go in before the tick that
	// admits this user; 0 when the next tick does.
	TicksAhead int64
	// ETA is the time until the tick that admits this user: the time until
	// the next tick plus one interval per full refill ahead.
	ETA time.Duration
	// ETALow and ETAHigh bound the wait (eta.go): the admission is likely
	// no sooner than ETALow, and due no later than ETAHigh. Both equal the
	// ETA for anyone not waiting in a moving line.
	ETALow, ETAHigh time.Duration
	// UntilNextTick is the time until the next tick is applied: 0 when it
	// is due and about to be.
	UntilNextTick time.Duration
	// Paused is true while the operator holds admissions: the place is
	// kept, but nobody moves until the queue resumes.
	Paused bool
	// ClosedAt is when the operator closed the sale (zero: open); the
	// status is then Closed for anyone not inside.
	ClosedAt time.Time
	// OpensAt and PrequeueFrom are the queue's scheduled opening (zero:
	// none). A Waiting ticket at Position 0 is in its draw: the order is
	// drawn at OpensAt, and its UntilNextTick and ETA count down to it.
	OpensAt, PrequeueFrom time.Time
	// AbandonAfter is how long the user may go unheard before the place
	// is dropped (0: never); polls must come more often.
	AbandonAfter time.Duration
	// AdmittedAt is when the admission began (Redis clock); zero unless
	// Entered. It identifies the admission: entering again, or being
	// admitted again later, gives a new one.
	AdmittedAt time.Time
	// Settings in force when the ticket was computed.
	RefillSize     int
	RefillInterval time.Duration
	SessionTTL     time.Duration
	SessionMax     time.Duration // sliding sessions' limit; 0: they do not slide
	// Seq is the place's arrival number in the line (its order), set by
	// an enter that put the user in the line (0 otherwise). The place
	// credential carries it, so that a later status of a place far from
	// the head can be answered from a replica's snapshot (Caller.Seq).
	Seq int64
	// DrawPlace is a Waiting place's place in the last draw, when a
	// draw placed it (from 1, in its line's draw; 0: it arrived). The
	// caller checks it against the draw's record (Store.Draw): a place an
	// older draw placed has no such place.
	DrawPlace int64
	// Estimated is true when Position (and so the ETA) comes from the
	// replica's snapshot of the line, not from Redis: the page says
	// "about". It never applies near the head (snapshot.go).
	Estimated bool

	refused error // the call was refused (defences.go); the rest is empty
}

// AdmissionEnds is the latest an Entered ticket's admission can run out:
// SessionTTL after it began, or with sliding sessions SessionMax after (a
// session not renewed ends sooner, which the pass's revocation check sees).
func (t Ticket) AdmissionEnds() time.Time {
	if t.SessionMax > 0 {
		return t.AdmittedAt.Add(t.SessionMax)
	}
	return t.AdmittedAt.Add(t.SessionTTL)
}

// TickResult reports one call of Tick.
type TickResult struct {
	// Lanes are each lane's part of an applied tick (the general lane's is
	// the rest), in name order.
	Lanes []LaneTick
	// Window is what the call did to the schedule's windows (any call,
	// applied or not); nil: nothing.
	Window  *WindowChange
	Applied bool  // false when the next tick was not due yet (or a draw is being placed)
	Moved   int64 // users moved from the line to the entered set
	Waiting int64 // people left in the line
	Tokens  int64 // tokens in the bucket after the tick
	Purged  int64 // expired sessions removed
	// Admitted counts the admissions of the interval that just ended: the
	// users the previous tick moved plus those who entered on its tokens.
	Admitted int64
	// Abandoned counts the places this tick dropped at the head of the
	// line: not heard from for abandon_after.
	Abandoned int64
	// Late is how long after it was due (an interval after the tick
	// before it, Redis clock) an applied tick was applied: the wait a
	// refill adds on top of the interval, whole intervals missed included.
	// The next tick is due an interval after this one: lateness carries
	// over, it is never made up.
	Late time.Duration
	// UntilNext is the time until the next tick is due: the interval
	// after an applied tick, the rest of it after one that was not due
	// yet, 0 while an opening's draw is being placed (each call places a
	// batch). The scheduler calls the tick again then (internal/engine/scheduler).
	UntilNext time.Duration
	// Budget is what the interval an applied tick opened admits:
	// refill_size, or the effective refill while adapting.
	Budget int64
	// Adapted is true when the tick stored the proposed effective refill
	// (Proposal): Budget is then the proposal (clamped).
	Adapted bool
	// Samples are what an applied tick measured (linestats.go): the time
	// in line and the ETA's error of the users it admitted and of the
	// direct admissions of the interval that ended, the time inside of
	// the sessions it purged as expired.
	Samples []Sample
}

// Proposal is an effective refill proposed for the next tick
// (internal/ops/autorate): stored only if the queue's budget is still Base when
// the tick is applied (a compare-and-set), and the controller is on.
type Proposal struct {
	Refill int // the proposed effective refill; 0: none
	Base   int // the budget it was worked out from
}

// Info is a snapshot of one queue.
type Info struct {
	Queue      string
	Waiting    int64
	Entered    int64 // active users: admissions that have not ended
	Tokens     int64
	Paused     bool
	Settings   Settings
	LastTickAt time.Time // zero when no tick was applied yet
	// AbandonedLastInterval counts the places the last tick dropped as
	// abandoned.
	AbandonedLastInterval int64
	// OpensAt and PrequeueFrom are the scheduled opening (zero: none).
	OpensAt, PrequeueFrom time.Time
	// DrawFor is the opening of the last draw (zero: none yet), DrawCount
	// the participants it placed in the line so far, DrawPlacing true
	// while it is being placed; its seed and list are Store.Draw's and
	// DrawEntries' (draw.go).
	DrawFor     time.Time
	DrawCount   int64
	DrawPlacing bool
	// AdmittedThisInterval counts the admissions of the interval in
	// progress: the last tick's moves and the direct entries since.
	AdmittedThisInterval int64
	// RefillEffective is what an interval admits now: refill_size, or the
	// effective refill while the origin's health drives the rate.
	RefillEffective int
	// ClosedAt is when the operator closed the sale (zero: open).
	ClosedAt time.Time
	Now      time.Time // Redis time of the snapshot
}

// HistoryPoint is one ended interval.
type HistoryPoint struct {
	At        time.Time // when the interval's tick was applied
	Admitted  int64     // admitted during the interval (never above refill_size)
	Waiting   int64     // people in the line at its end
	Abandoned int64     // places its tick dropped as abandoned
	// Arrivals counts who came during the interval: arrival numbers given
	// (re-entries included, refusals not), direct admissions and an
	// opening's participants placed in the line (0 in entries written
	// before the line statistics).
	Arrivals int64
	Active   int64 // active users at its end (0 before the line statistics)
	Refill   int64 // its budget (refill_size or the effective refill); 0 in entries written before it was kept
}

// Overview is what the operator sees of one queue (Inspector.Overview): the
// snapshot, the kept history, and the admissions of the last minute.
type Overview struct {
	Info
	History []HistoryPoint // oldest first
	// AdmittedLastMinute counts the admissions of the interval in progress
	// and of the intervals that ended within the last minute of the Redis
	// clock.
	AdmittedLastMinute int64
}

// Update holds the settings an operator changes live; nil fields stay as
// they are. Each field is tagged with its setting's name (Catalog).
type Update struct {
	RefillSize          *int           `setting:"refill_size"`
	MaxActive           *int           `setting:"max_active"`
	MaxWaiting          *int           `setting:"max_waiting"`
	ChallengeDifficulty *int           `setting:"challenge_difficulty"`
	Paused              *bool          `setting:"paused"`
	AbandonAfter        *time.Duration `setting:"abandon_after_ms"`
	// OpensAt and PrequeueFrom schedule an opening; a zero time clears it.
	OpensAt      *time.Time `setting:"opens_at"`
	PrequeueFrom *time.Time `setting:"prequeue_from"`
	// WebhookURL is where the queue's events go instead of
	// WAITROOM_WEBHOOK_URL; "" returns to it. Its form is checked by the
	// caller (webhook.CheckURL, which knows the insecure switch); the
	// store checks only its length.
	WebhookURL *string `setting:"webhook_url"`
	// HumanCheck is the queue's human_check: HumanOff ("" too),
	// HumanEscalate or HumanAlways (price.go).
	HumanCheck *string `setting:"human_check"`
	// Title and Message are the queue's text on its waiting page, by
	// language tag (Text); an empty map clears one.
	Title   *map[string]string `setting:"title"`
	Message *map[string]string `setting:"message"`
	// The controller's settings (Adapt). Switching it off drops the
	// effective refill at once: refill_size is the budget again.
	AdaptEnabled       *bool          `setting:"adapt_enabled"`
	OriginTargetP95    *time.Duration `setting:"origin_target_p95_ms"`
	OriginMaxErrorRate *float64       `setting:"origin_max_error_rate"`
	MinRefillSize      *int           `setting:"min_refill_size"`
	// OriginProbeURL: an absolute http(s) URL, or "" for none.
	OriginProbeURL *string `setting:"origin_probe_url"`

	// Lanes replaces the queue's lanes; an empty list: none.
	Lanes *Lanes `setting:"lanes"`
	// By is who asks for the change, as the settings_changed event names
	// them: the JSON of the back office's actor ({"kind":…,"name":…}),
	// which the engine carries and never reads; nil: not named. It is no
	// setting.
	By json.RawMessage
}

// LaneTick is one lane's part of an applied tick.
type LaneTick struct {
	Lane    string
	Moved   int64 // admitted from the lane's line
	Waiting int64 // left in it
}

// WindowChange is a tick call's change to the schedule's windows
// (windows.lua, which the call ran before the tick): it ended the window
// in force, started the one beginning At, or both.
type WindowChange struct {
	Started, Ended bool
	At             time.Time // the start of the window started, or, ended alone, of the one ended
	// EndChanges and StartChanges are the settings the end and the start
	// changed, each with its value before and after: the fields the
	// window set that nobody had changed since, at its end.
	EndChanges, StartChanges []SettingChange
}

// SettingChange is one setting a window's start or end changed, by its
// name (Catalog), its values before and after as the admin API shows
// them (JSON).
type SettingChange struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}
