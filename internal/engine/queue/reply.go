package queue

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reading the scripts' replies: integers (times and durations in ms) in
// the order each script's header lists, turned into tickets, snapshots
// and typed errors here and nowhere else.

// The lists below mirror the named replies at the top of common.lua, in
// the same order (Lua counts positions from 1, Go from 0);
// TestRepliesMatchLua fails when the two disagree.

// Status codes of a call's answer (ALLOWED ... CHALLENGE).
const (
	statusAllowed    = iota // challenge.lua let the call through
	statusEntered           // place: the admission's start (ms)
	statusWaiting           // place: the position (0: in a draw)
	statusNotWaiting        // place: the code of why the place ended (reasons)
	statusNotOpen           // before a scheduled opening's pre-queue window
	statusLimited           // refused, place: the wait (ms)
	statusFull              // refused, place: the wait (ms)
	statusChallenge         // refused: no valid, unused proof of work
	statusHuman             // refused: a human check is asked
	statusOtherLine         // refused, place: the other line holding the account (0: the lanes changed)
	statusClosed            // refused: the operator closed the sale (close.lua)
	statusDrawStale         // refused, changing nothing: the call's draw keys are not the sealed draw's (draw.go)
)

// Positions in the head of enter.lua's and status.lua's replies (HEAD_*).
const (
	headWaiting = iota
	headUntilNextTick
	headInterval
	headRefillSize
	headTTL
	headPaused
	headOpensAt
	headPrequeueFrom
	headAbandonAfter
	headUntilOpen
	headClosed // when the operator closed the sale (ms; 0: open)
	headLen    // then a status and a place per call
)

// Positions in info.lua's reply (INFO_*).
const (
	infoWaiting = iota
	infoEntered
	infoTokens
	infoRefillSize
	infoInterval
	infoTTL
	infoLastTickAt
	infoNow
	infoMaxActive
	infoPaused
	infoAbandonAfter
	infoAbandoned
	infoOpensAt
	infoPrequeueFrom
	infoDrawFor
	infoDrawPlacing
	infoDrawCount
	infoAdmitted
	infoMaxWaiting
	infoDifficulty
	infoBudget
	infoClosed
	infoLen
)

// Positions in tick.lua's reply (TICK_*).
const (
	tickApplied = iota // 1, 0, or having changed nothing, tickLanesChanged or tickWindowsDue
	tickMoved
	tickWaiting
	tickTokens
	tickPurged
	tickAdmitted
	tickAbandoned
	tickLate
	tickUntilNext
	tickBudget
	tickAdapted
	tickLanes // n: then moved and waiting for each of the n lanes the call was given
	tickLen   // then a group of four per Sample: kind, value (ms), count, line (0: general, i: the i-th lane)
)

// tickApplied's values of a call to make again (LANES_CHANGED,
// WINDOWS_DUE): the lanes changed since the caller read them, or a window
// of the schedule starts or ends, which windows.lua makes first.
const (
	tickLanesChanged = -1
	tickWindowsDue   = -2
)

// Positions in windows.lua's reply (WINDOWS_*).
const (
	windowsDid     = iota // windowStarted | windowEnded
	windowsAt             // the start (ms) of the window concerned
	windowsChanges        // a string: the fields they changed (WindowChange)
	windowsLen
)

// The bits of WINDOWS_DID (WINDOW_STARTED, WINDOW_ENDED).
const (
	windowStarted = 1
	windowEnded   = 2
)

// reasons are the codes of the scripts' REASONS (common_places.lua), from 1.
var reasons = []string{ReasonAbandoned, ReasonLeft, ReasonExpired, ReasonRemoved, ReasonDone, ReasonMoved, ReasonClosed}

// reasonMoved is the code of ReasonMoved: a stale place credential
// (keep_current, common_places.lua), refused with ErrMoved.
var reasonMoved = int64(slices.Index(reasons, ReasonMoved) + 1)

// batchTickets reads the reply v (or err) of a batched script's call:
// the head, a status and place per call, and with seqs (enter.lua) then
// an arrival number per call.
func (s *Store) batchTickets(name string, n int, v []int64, err error, seqs bool) ([]Ticket, error) {
	if err != nil {
		return nil, fmt.Errorf("queue: %s: %w", name, err)
	}
	want := headLen + 2*n
	if seqs {
		want += n
	}
	if len(v) != want {
		return nil, fmt.Errorf("queue: %s: reply of %d values for %d calls", name, len(v), n)
	}
	tickets := make([]Ticket, n)
	for i := range n {
		status, place := v[headLen+2*i], v[headLen+1+2*i]
		if err := refusal(status, place); err != nil {
			tickets[i].refused = err
			continue
		}
		if tickets[i], err = newTicket(v[:headLen], status, place); err != nil {
			return nil, err
		}
		tickets[i].SessionMax = s.defaults.SessionMax
		if seqs {
			tickets[i].Seq = v[headLen+2*n+i]
			if seq := tickets[i].Seq; seq < 0 {
				// A place a draw placed: its score is its place in the
				// draw (drawPlaceBase). Older draws' scores were below
				// that range's top too; the caller checks the place
				// against the draw's count before it says it.
				tickets[i].Seq, tickets[i].DrawPlace = 0, seq-drawPlaceBase+1
			}
		}
	}
	return tickets, nil
}

// newTicket builds a ticket from a reply's head (headLen values) and the
// user's status code and place (see status*). The ETA is the time until
// the next tick plus one interval for every full refill ahead.
func newTicket(head []int64, status, place int64) (Ticket, error) {
	refill := head[headRefillSize]
	t := Ticket{
		Paused:         head[headPaused] == 1,
		OpensAt:        msTime(head[headOpensAt]),
		PrequeueFrom:   msTime(head[headPrequeueFrom]),
		AbandonAfter:   ms(head[headAbandonAfter]),
		Waiting:        head[headWaiting],
		UntilNextTick:  ms(head[headUntilNextTick]),
		RefillInterval: ms(head[headInterval]),
		RefillSize:     int(refill),
		SessionTTL:     ms(head[headTTL]),
		ClosedAt:       msTime(head[headClosed]),
	}
	switch status {
	case statusEntered:
		t.Status = Entered
		t.AdmittedAt = time.UnixMilli(place)
	case statusWaiting:
		t.Status = Waiting
		t.Position = place
		if place == 0 { // in a draw: the order is drawn at the opening
			t.UntilNextTick = ms(head[headUntilOpen])
			t.ETA = t.UntilNextTick
		} else if refill > 0 {
			t.TicksAhead = (place - 1) / refill
			t.ETA = t.UntilNextTick + time.Duration(t.TicksAhead)*t.RefillInterval
		}
	case statusNotWaiting:
		t.Status = NotWaiting
		if place >= 1 && int(place) <= len(reasons) {
			t.Reason = reasons[place-1]
		}
	case statusNotOpen:
		t.Status = NotOpen
	default:
		return Ticket{}, fmt.Errorf("queue: unknown status code %d", status)
	}
	// Sold out: whoever is not inside is told, waiting or dropped alike
	// (the tick drops the places a chunk at a time; tick_soldout.lua).
	if !t.ClosedAt.IsZero() && (t.Status == Waiting || t.Status == NotWaiting) {
		t.Status, t.Position, t.TicksAhead, t.ETA = Closed, 0, 0, 0
		if t.Reason == "" {
			t.Reason = ReasonClosed
		}
	}
	t.setRange()
	return t, nil
}

// otherLine is statusOtherLine's refusal as the script gives it: the
// index (from 1) of the line among those the call named that holds the
// account's place, or 0 when the call's lanes were out of date;
// Store.Enter turns it into an *OtherLineError or calls again.
type otherLine int64

func (o otherLine) Error() string {
	return fmt.Sprintf("queue: the account holds a place in line %d", int64(o))
}
func (o otherLine) Unwrap() error { return ErrPlaceInOtherLine }

// refusal is the error of a refused call's status code (nil for any
// other), with the wait its place holds.
func refusal(status, wait int64) error {
	var err error
	switch status {
	case statusLimited:
		err = ErrRateLimited
	case statusFull:
		err = ErrQueueFull
	case statusChallenge:
		return &ChallengeError{Difficulty: int(wait)}
	case statusHuman:
		return ErrHumanCheckRequired
	case statusOtherLine:
		return otherLine(wait)
	case statusClosed:
		return ErrSaleClosed
	case statusDrawStale:
		return drawStale{}
	case statusNotWaiting:
		if wait == reasonMoved {
			return ErrMoved
		}
		return nil
	default:
		return nil
	}
	return &Retry{Err: err, After: ms(wait)}
}

// newTickResult reads tick.lua's reply, for the lanes the call was
// given; window is the change to the windows the call made first (nil:
// none).
func newTickResult(v []int64, lanes []string, window *WindowChange) (TickResult, error) {
	if len(v) < tickLen {
		return TickResult{}, fmt.Errorf("queue: tick: unexpected reply %v", v)
	}
	n := int(v[tickLanes])
	if n < 0 || n > len(lanes) || len(v) < tickLen+2*n || (len(v)-tickLen-2*n)%4 != 0 {
		return TickResult{}, fmt.Errorf("queue: tick: unexpected reply %v", v)
	}
	var lines []LaneTick
	for i := range n {
		lines = append(lines, LaneTick{Lane: lanes[i], Moved: v[tickLen+2*i], Waiting: v[tickLen+2*i+1]})
	}
	var samples []Sample
	for g := v[tickLen+2*n:]; len(g) > 0; g = g[4:] {
		lane := ""
		if g[3] > 0 && int(g[3]) <= len(lanes) {
			lane = lanes[g[3]-1]
		}
		samples = append(samples, Sample{Kind: SampleKind(g[0]), Value: ms(g[1]), Count: g[2], Lane: lane})
	}
	return TickResult{
		Lanes:     lines,
		Window:    window,
		Samples:   samples,
		Applied:   v[tickApplied] == 1,
		Moved:     v[tickMoved],
		Waiting:   v[tickWaiting],
		Tokens:    v[tickTokens],
		Purged:    v[tickPurged],
		Admitted:  v[tickAdmitted],
		Abandoned: v[tickAbandoned],
		Late:      ms(v[tickLate]),
		UntilNext: ms(v[tickUntilNext]),
		Budget:    v[tickBudget],
		Adapted:   v[tickAdapted] == 1,
	}, nil
}

// newWindowChange reads windows.lua's reply: nil when the call changed
// nothing.
func newWindowChange(raw []any) (*WindowChange, error) {
	if len(raw) != windowsLen {
		return nil, fmt.Errorf("queue: windows: unexpected reply %v", raw)
	}
	did, okDid := raw[windowsDid].(int64)
	at, okAt := raw[windowsAt].(int64)
	changes, okChanges := raw[windowsChanges].(string)
	if !okDid || !okAt || !okChanges {
		return nil, fmt.Errorf("queue: windows: unexpected reply %v", raw)
	}
	if did == 0 {
		return nil, nil
	}
	w := &WindowChange{Started: did&windowStarted != 0, Ended: did&windowEnded != 0, At: msTime(at)}
	if changes != "" {
		var c struct{ Ended, Started []SettingChange }
		if err := json.Unmarshal([]byte(changes), &c); err != nil {
			return nil, fmt.Errorf("queue: windows: the changes %q: %w", changes, err)
		}
		w.EndChanges, w.StartChanges = c.Ended, c.Started
	}
	return w, nil
}

// newInfo reads info.lua's reply for queue; sessionMax is the replica's
// (sliding sessions are not a queue's setting).
func newInfo(queue string, v []int64, sessionMax time.Duration) (Info, error) {
	if len(v) != infoLen {
		return Info{}, fmt.Errorf("queue: info: unexpected reply %v", v)
	}
	info := Info{
		Queue:   queue,
		Waiting: v[infoWaiting],
		Entered: v[infoEntered],
		Tokens:  v[infoTokens],
		Paused:  v[infoPaused] == 1,
		Settings: Settings{
			RefillSize:          int(v[infoRefillSize]),
			RefillInterval:      ms(v[infoInterval]),
			SessionTTL:          ms(v[infoTTL]),
			SessionMax:          sessionMax,
			MaxActive:           int(v[infoMaxActive]),
			AbandonAfter:        ms(v[infoAbandonAfter]),
			MaxWaiting:          int(v[infoMaxWaiting]),
			ChallengeDifficulty: int(v[infoDifficulty]),
		},
		AbandonedLastInterval: v[infoAbandoned],
		OpensAt:               msTime(v[infoOpensAt]),
		PrequeueFrom:          msTime(v[infoPrequeueFrom]),
		DrawFor:               msTime(v[infoDrawFor]),
		DrawPlacing:           v[infoDrawPlacing] == 1,
		DrawCount:             v[infoDrawCount],
		AdmittedThisInterval:  v[infoAdmitted],
		RefillEffective:       int(v[infoBudget]),
		ClosedAt:              msTime(v[infoClosed]),
		Now:                   time.UnixMilli(v[infoNow]),
	}
	if v[infoLastTickAt] > 0 {
		info.LastTickAt = time.UnixMilli(v[infoLastTickAt])
	}
	return info, nil
}

// parseHistoryEntry reads a history entry (its format: keys.go,
// history): older entries have fewer fields, those missing read as 0;
// fields added after the ones known here are ignored.
func parseHistoryEntry(entry string) (HistoryPoint, error) {
	parts := strings.Split(entry, ":")
	if len(parts) < 3 {
		return HistoryPoint{}, fmt.Errorf("queue: malformed history entry %q", entry)
	}
	var n [7]int64
	for i, p := range parts[:min(len(parts), len(n))] {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return HistoryPoint{}, fmt.Errorf("queue: malformed history entry %q", entry)
		}
		n[i] = v
	}
	return HistoryPoint{At: time.UnixMilli(n[0]), Admitted: n[1], Waiting: n[2], Abandoned: n[3], Arrivals: n[4], Active: n[5], Refill: n[6]}, nil
}

// ms is a duration the scripts give in milliseconds.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// msTime is the time of a Unix ms count, zero for 0.
func msTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
