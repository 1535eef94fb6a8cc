// Package admission is the public API's one way into a queue: who enters
// (the member of a place credential, of a site's join token or of a
// hand-over, a new anonymous member, or in load tests a plain id), what
// the caller brings (a proof of work, a human check's answer) and the
// place credential it leaves with, behind one call (Admission.Enter).
//
// It knows nothing of HTTP: the handler reads the request into a Request
// and writes the Result (its ticket, its place token, what becomes of the
// place cookie). The queue's state is the queue store's (queue.Store.Enter,
// one script call in the common case); a hand-over's is internal/trust/handoff's.
package admission

import (
	"context"
	"errors"
	"net/netip"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/handoff"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// Errors of an enter refused before the store is asked. The handler
// answers each with its stable code; every other error comes from the
// packages named in Enter's comment.
var (
	// ErrInvalidPlace: an app's bearer token is not a place credential
	// for the queue (an app that claims a place must prove it).
	ErrInvalidPlace = errors.New("admission: invalid place credential")
	// ErrTwoIdentities: the body names two of a plain id, a join token and
	// a hand-over.
	ErrTwoIdentities = errors.New("admission: give user_id or join_token, not both")
	// ErrUserIDsDisabled: a plain user id outside insecure mode.
	ErrUserIDsDisabled = errors.New("admission: plain user ids are disabled")
)

// Store is the queue's one way in (queue.Store.Enter), and the way in
// with an invitation code (queue.Store.Redeem).
type Store interface {
	Enter(ctx context.Context, queue string, e queue.Entry) (queue.Ticket, error)
	Redeem(ctx context.Context, queue, digest string, e queue.Entry) (queue.Ticket, string, error)
}

// Handoffs takes over a place another device handed over
// (handoff.Service.Enter).
type Handoffs interface {
	Enter(ctx context.Context, q, input, client, replaces string, replacesGen int64) (handoff.Moved, queue.Ticket, error)
}

// HumanCheck asks a human check's provider about a visitor's answer
// (humancheck.Checker.Verify).
type HumanCheck interface {
	Verify(ctx context.Context, token, remoteIP string) error
}

// Paid records what visitors paid (paid.Recorder.Record).
type Paid interface {
	Record(queue string, e paid.Event)
}

// Options are what an Admission needs; Store, Places and Challenges are
// required.
type Options struct {
	Store Store
	// Places issues and verifies place credentials.
	Places *place.Credentials
	// Challenges checks the proofs of work enters bring.
	Challenges *challenge.Challenges
	// Join verifies sites' join tokens; nil refuses them.
	Join *place.Join
	// Handoffs takes over handed-over places; nil refuses every
	// hand-over (handoff.ErrInvalid).
	Handoffs Handoffs
	// Human checks a human check's answer; nil: none, a human_token is
	// ignored (and the store never asks for one).
	Human HumanCheck
	// Paid hears what each enter cost its caller; nil: nobody.
	Paid Paid
	// Networks is the operator's table of network classes; nil: every
	// network of the default class.
	Networks *netclass.Watcher
	// InsecureUserIDs accepts plain user ids: whoever names an id owns
	// its place. For load tests only.
	InsecureUserIDs bool
	// Codes digests the invitation codes enters bring; nil: every code
	// is refused (queue.ErrInvalidCode).
	Codes *invite.Codes
	// Guard counts wrong codes and locks out guessers; required with
	// Codes.
	Guard *invite.Guard
}

// Admission resolves who enters and enters them.
type Admission struct {
	store       Store
	places      *place.Credentials
	challenges  *challenge.Challenges
	join        *place.Join
	handoffs    Handoffs
	human       HumanCheck
	paid        Paid
	networks    *netclass.Watcher
	insecureIDs bool
	codes       *invite.Codes // nil: codes refused
	guard       *invite.Guard
}

// New returns the admission of o.
func New(o Options) *Admission {
	a := &Admission{store: o.Store, places: o.Places, challenges: o.Challenges, join: o.Join,
		handoffs: o.Handoffs, human: o.Human, paid: o.Paid, networks: o.Networks, insecureIDs: o.InsecureUserIDs,
		codes: o.Codes, guard: o.Guard}
	if a.paid == nil {
		a.paid = (*paid.Recorder)(nil) // records nothing
	}
	return a
}

// Request is one enter as the handler read it: the body's fields, the
// place credential the request carries and the client's address.
type Request struct {
	// Queue is a queue of the store (the handler checked the name).
	Queue string
	// UserID is a plain user id (insecure mode only; nil: none).
	UserID *string
	// JoinToken is a site's join token ("": none).
	JoinToken string
	// Challenge and Nonce are a solved proof of work ("": none).
	Challenge, Nonce string
	// Handoff is a hand-over's token or code as typed ("": none).
	Handoff string
	// HumanToken is the human check's answer ("": none).
	HumanToken string
	// InviteCode is an invitation code as typed ("": none): the place
	// goes to the code's lane (Admission.Enter).
	InviteCode string
	// Credential is the place credential the request carries: an app's
	// bearer token, else the browser's place cookie for Queue ("": none,
	// or the cookie twice, which is refused: one of them was planted).
	Credential string
	// Bearer says the request sent a bearer token (Credential is it).
	Bearer bool
	// Addr is the client's address (behind trusted proxies, the one they
	// name): the budgets of the limits, the price and the human check.
	Addr netip.Addr
}

// Result is what an enter answers, with or without an error.
type Result struct {
	// Member is the member id holding the place.
	Member string
	// Ticket is the place, when the enter went through.
	Ticket queue.Ticket
	// Token is the place credential that goes with the answer ("": none:
	// a plain id, or the enter failed).
	Token string
	// Cookie is the place credential for the browser's place cookie ("":
	// leave the cookie as it is). Even a failed enter can set one: a
	// store that did not answer may have made the place, and a hand-over
	// moved the place whatever its ticket's fate.
	Cookie string
	// ClearCookie says the browser's place cookie names a place that moved
	// to another device: delete it, so the page can join afresh.
	ClearCookie bool
}

// Client is who addr is in the enter limits and the price of a place:
// its address (clientip.Key) and its wider networks, the IPv4 /24 or
// IPv6 /56 and the IPv6 /48, so that a block's addresses share their
// budgets and their count of places. By the operator's networks file
// (netclass.Table.Tiers), a shared network's people each count as their
// own address, and a hosting network pays the ceiling for every place.
func (a *Admission) Client(addr netip.Addr) queue.Caller {
	t, class := a.networks.Table().Tiers(addr)
	c := queue.Caller{Client: t.Host, Networks: [2]string{t.Network, t.Site}}
	if class == netclass.Hosting {
		c.Pricing = queue.PriceCeiling
	}
	return c
}

// Enter enters the caller req proves into req.Queue, or takes over the
// place its hand-over names, and returns the place with the credential
// (and cookie) that goes with it. The common case, a new anonymous member
// or a credential's member entering again, is one round trip to Redis
// (queue.Store.Enter); a join adds a status, a replaced place a leave and
// a status; a hand-over is internal/trust/handoff's.
//
// Besides this package's errors it fails with the store's (queue.Store.Enter),
// place.ErrInvalidJoin, queue.ErrUnknownLane (a join token's lane),
// challenge.ErrInvalid, humancheck.ErrFailed and handoff's.
//
// With an invitation code, the place (the caller's own, or a new one)
// goes into the code's lane instead (queue.Store.Redeem): a wrong code is
// queue.ErrInvalidCode, counted against the caller's address and network,
// and a caller who guessed too many is refused with invite.ErrLocked
// before the code is even looked up.
func (a *Admission) Enter(ctx context.Context, req Request) (Result, error) {
	if req.Handoff != "" {
		if req.InviteCode != "" {
			return Result{}, ErrTwoIdentities
		}
		return a.takeOver(ctx, req)
	}
	if req.InviteCode != "" {
		return a.redeem(ctx, req)
	}
	e, credential, err := a.entry(ctx, req)
	if err != nil {
		return Result{}, err
	}
	t, err := a.store.Enter(ctx, req.Queue, e)
	a.notePaid(req.Queue, e, t, err)
	res := Result{Member: e.User, Ticket: t}
	if err != nil {
		res.Ticket = queue.Ticket{}
		switch {
		case errors.Is(err, queue.ErrMoved):
			res.ClearCookie = !req.Bearer
		case credential && !errors.Is(err, queue.ErrPlaceInOtherLine):
			// Even a 503 (outcome unknown) leaves the browser able to ask
			// for the place it may have got; without its arrival number,
			// its status then asks Redis.
			res.Cookie = a.places.IssueGen(req.Queue, e.User, 0, e.Gen)
		}
		return res, err
	}
	if credential {
		res.Token = a.places.IssueGen(req.Queue, e.User, t.Seq, e.Gen)
		res.Cookie = res.Token
	}
	return res, nil
}

// redeem is Enter with req.InviteCode: behind the guard, the code's
// digest redeemed by the store, and the place credential of the member
// that holds the place now (the lane's).
func (a *Admission) redeem(ctx context.Context, req Request) (Result, error) {
	if a.codes == nil || a.guard == nil {
		return Result{}, queue.ErrInvalidCode
	}
	c := a.Client(req.Addr)
	who := invite.Client{Address: c.Client, Network: c.Networks[0]}
	if err := a.guard.Check(ctx, req.Queue, who); err != nil {
		return Result{}, err
	}
	digest, ok := a.codes.Digest(req.Queue, req.InviteCode)
	if !ok {
		return Result{}, a.wrongCode(ctx, req.Queue, who)
	}
	e, credential, err := a.entry(ctx, req)
	if err != nil {
		return Result{}, err
	}
	t, member, err := a.store.Redeem(ctx, req.Queue, digest, e)
	a.notePaid(req.Queue, e, t, err)
	switch {
	case errors.Is(err, queue.ErrInvalidCode):
		return Result{}, a.wrongCode(ctx, req.Queue, who)
	case errors.Is(err, queue.ErrMoved):
		return Result{ClearCookie: !req.Bearer}, err
	case err != nil:
		return Result{}, err
	}
	res := Result{Member: member, Ticket: t}
	if credential {
		gen := e.Gen
		if member != e.User {
			gen = 0 // a new member: no credential of it was ever issued
		}
		res.Token = a.places.IssueGen(req.Queue, member, t.Seq, gen)
		res.Cookie = res.Token
	}
	return res, nil
}

// wrongCode counts a wrong code against who and returns what to answer:
// queue.ErrInvalidCode, or invite.ErrLocked when who was locked already.
func (a *Admission) wrongCode(ctx context.Context, q string, who invite.Client) error {
	if err := a.guard.Wrong(ctx, q, who); err != nil {
		return err
	}
	return queue.ErrInvalidCode
}

// entry is the enter req asks for, from what the request proves, and
// whether to hand out a place credential with it (not for a plain id).
// Whoever enters is a plain user id (insecure mode), a site's join
// token's member, the member of a place credential (entering again), or
// a new anonymous member. A proof of work is checked here (an HMAC and
// one hash); the store makes it single-use and compares it with the
// queue's difficulty.
func (a *Admission) entry(ctx context.Context, req Request) (queue.Entry, bool, error) {
	q := req.Queue
	e := queue.Entry{Caller: a.Client(req.Addr)}
	if req.HumanToken != "" && a.human != nil {
		// Checked before the store: the provider's answer is what the
		// store's price reads (Caller.Human). A provider that cannot answer
		// makes this enter pay proof of work at the ceiling instead.
		switch err := a.human.Verify(ctx, req.HumanToken, req.Addr.String()); {
		case err == nil:
			e.Human = true
			a.paid.Record(q, paid.Human(paid.HumanPassed))
		case errors.Is(err, humancheck.ErrFailed):
			a.paid.Record(q, paid.Human(paid.HumanFailed))
			return queue.Entry{}, false, err
		default:
			a.paid.Record(q, paid.Human(paid.HumanUnavailable))
		}
	}
	if req.Challenge != "" {
		p, err := a.challenges.Check(q, req.Challenge, req.Nonce)
		if err != nil {
			return queue.Entry{}, false, err
		}
		e.Proof = p
	}
	switch {
	case req.UserID != nil && req.JoinToken != "":
		return queue.Entry{}, false, ErrTwoIdentities
	case req.UserID != nil:
		if !a.insecureIDs {
			return queue.Entry{}, false, ErrUserIDsDisabled
		}
		e.User, e.Proved = *req.UserID, true
		return e, false, nil
	case req.JoinToken != "":
		member, err := a.join.Member(q, req.JoinToken)
		if err != nil {
			return queue.Entry{}, false, err
		}
		// The account may already hold a place from another device; an
		// anonymous place this browser held is given up for it. An account
		// is one person, whatever network it comes from: it pays no
		// network's price.
		e.User, e.Proved, e.Join = member, true, true
		e.Pricing = queue.PriceNone
		if old, ok := a.placeOf(req); ok {
			e.Replaces = old.Member
		}
	default:
		// Re-entering with a credential keeps the member id (and goes to
		// the back, as any re-entry does); otherwise this is a new place.
		p, ok := a.placeOf(req)
		if !ok {
			if req.Bearer {
				return queue.Entry{}, false, ErrInvalidPlace
			}
			p = place.Place{Member: place.NewMember()} // no cookie, or a stale one
		} else {
			e.Proved, e.Credential, e.Gen = true, true, p.Gen
		}
		e.User = p.Member
	}
	return e, true, nil
}

// takeOver takes over the place of the hand-over req names: the same
// member at the same position, with a fresh credential (and cookie). A
// place the caller held in the queue before is given up.
func (a *Admission) takeOver(ctx context.Context, req Request) (Result, error) {
	if a.handoffs == nil {
		return Result{}, handoff.ErrInvalid
	}
	if req.UserID != nil || req.JoinToken != "" {
		return Result{}, ErrTwoIdentities
	}
	old, _ := a.placeOf(req)
	m, t, err := a.handoffs.Enter(ctx, req.Queue, req.Handoff, clientip.Key(req.Addr), old.Member, old.Gen)
	if m.Member == "" {
		if err == nil {
			err = errors.New("admission: the hand-over moved no place")
		}
		return Result{}, err
	}
	// The place is this caller's now, whatever the ticket's fate.
	token := a.places.IssueGen(req.Queue, m.Member, m.Seq, m.Gen)
	res := Result{Member: m.Member, Cookie: token}
	if err != nil {
		return res, err
	}
	res.Ticket, res.Token = t, token
	return res, nil
}

// placeOf is the place in req.Queue that req's credential proves.
func (a *Admission) placeOf(req Request) (place.Place, bool) {
	if req.Credential == "" {
		return place.Place{}, false
	}
	p, err := a.places.VerifyPlace(req.Queue, req.Credential)
	return p, err == nil
}

// notePaid records what an enter cost its caller (the back office's and
// the metrics' "what people paid"): a place made and the proof of work it
// carried, or a human check asked.
func (a *Admission) notePaid(q string, e queue.Entry, t queue.Ticket, err error) {
	switch {
	case errors.Is(err, queue.ErrHumanCheckRequired):
		a.paid.Record(q, paid.Human(paid.HumanAsked))
	case err == nil && (t.Status == queue.Waiting || t.Status == queue.Entered):
		a.paid.Record(q, paid.Placed(e.Proof.Difficulty))
	}
}
