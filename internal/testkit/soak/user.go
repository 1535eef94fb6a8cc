package soak

import (
	"context"
	"math/rand/v2"
	"time"
)

// user is one simulated person: arrives at a random moment, enters,
// polls as the answers suggest, now and then enters again (to the back)
// or leaves; once admitted, is done, leaves or enters again; and may come
// back after leaving. Its seeded generator fixes its choices, not the
// interleaving with the others.
type user struct {
	p   *phase
	rng *rand.Rand
	c   *caller

	state     string // "", WAITING, ENTERED; "?" while an Unknown write may land
	unsureAt  time.Time
	poll      time.Duration
	ops       []Op
	members   []held // every credential held, for the final status
	anonymous int    // enters that got no answer and no credential
}

type held struct{ token, member string }

// Bounds on the pause between a waiting user's polls: the answer's
// poll_after_ms within them.
const (
	minPoll = 300 * time.Millisecond
	maxPoll = 5 * time.Second
)

func (u *user) run(ctx context.Context, load time.Duration) {
	// Arrivals spread over the first half of the load.
	if !u.wait(ctx, time.Duration(u.rng.Int64N(int64(load/2)))) {
		return
	}
	for {
		var kind Kind
		pause := time.Duration(0)
		switch u.state {
		case "":
			kind = Enter
		case "?":
			// Only ask until whatever was in flight has landed.
			kind, pause = Status, 500*time.Millisecond
		case "WAITING":
			pause = u.poll
			switch x := u.rng.Float64(); {
			case x < 0.02:
				kind = Enter // to the back of the line
			case x < 0.03:
				kind = Leave
			default:
				kind = Status
			}
		case "ENTERED":
			pause = time.Duration(500+u.rng.IntN(1500)) * time.Millisecond
			switch x := u.rng.Float64(); {
			case x < 0.4:
				kind = Done
			case x < 0.5:
				kind = Leave
			case x < 0.6:
				kind = Enter
			default:
				kind = Status
			}
		}
		if !u.wait(ctx, pause) {
			return
		}
		// Settled before the call is sent: its answer is then the
		// member's state, nothing else in flight.
		settled := u.state == "?" && u.p.settled(u.unsureAt)
		r := u.c.do(ctx, kind)
		if ctx.Err() != nil {
			return
		}
		u.record(r)
		if !u.next(ctx, r, settled) {
			return
		}
	}
}

// wait pauses d, and reports false when the load has ended meanwhile.
func (u *user) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-u.p.stop:
		return false
	case <-ctx.Done():
		return false
	case <-t.C:
		return !stopped(u.p.stop)
	}
}

func (u *user) record(r result) {
	// An op with no member is counted, never checked per member.
	if r.op.Member == "" && r.op.Kind == Enter && r.op.Outcome == Unknown {
		u.anonymous++ // a place may exist that nobody holds
	}
	u.ops = append(u.ops, r.op)
	if r.op.Member != "" && (len(u.members) == 0 || u.members[len(u.members)-1].member != r.op.Member) {
		u.members = append(u.members, held{u.c.token, u.c.member})
	}
}

// next moves the user on after a call; false when the user is through.
func (u *user) next(ctx context.Context, r result, settled bool) bool {
	op := r.op
	if u.state == "?" {
		if op.Outcome == OK && settled {
			u.state = stateOf(op.Status)
			u.poll = pollOf(r.ticket)
		}
		return true
	}
	switch op.Outcome {
	case Refused:
		// Rate limited, every replica down, or a pass refused: nothing
		// changed; try again a moment later.
		return u.wait(ctx, time.Second)
	case Unknown:
		if op.Kind == Status {
			return u.wait(ctx, 500*time.Millisecond)
		}
		if u.c.member == "" {
			u.state = "" // no credential came back: start afresh
			return u.wait(ctx, time.Second)
		}
		u.unsure(op)
		return true
	}
	switch op.Kind {
	case Enter, Status:
		u.state = stateOf(op.Status)
		u.poll = pollOf(r.ticket)
		if u.state == "" {
			return u.comeBack(ctx)
		}
	case Leave, Done:
		u.state = ""
		return u.comeBack(ctx)
	}
	return true
}

// unsure waits out a write whose effect is not known.
func (u *user) unsure(op Op) {
	u.state, u.unsureAt = "?", op.Ended
}

// comeBack decides, for a user with no place, whether to enter again
// later (a third do) or be through.
func (u *user) comeBack(ctx context.Context) bool {
	if u.rng.Float64() < 0.67 {
		return false
	}
	return u.wait(ctx, time.Duration(1000+u.rng.IntN(2000))*time.Millisecond)
}

func stateOf(status string) string {
	switch status {
	case "WAITING", "ENTERED":
		return status
	}
	return ""
}

func pollOf(t ticket) time.Duration {
	return min(max(time.Duration(t.PollAfterMS)*time.Millisecond, minPoll), maxPoll)
}
