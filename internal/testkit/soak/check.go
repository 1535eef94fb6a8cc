package soak

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
)

// Kind is what a call asked for.
type Kind uint8

// The calls a simulated user makes.
const (
	Enter  Kind = iota // POST /enter: a new place, or to the back again
	Status             // GET /status
	Leave              // DELETE /place
	Done               // POST /done with the entry pass
)

func (k Kind) String() string {
	return [...]string{"enter", "status", "leave", "done"}[k]
}

// Outcome is what the client knows of a call's effect.
type Outcome uint8

const (
	// OK: the service answered with success (2xx); the call took effect.
	OK Outcome = iota
	// Refused: an answer that says nothing changed (4xx: rate limited, an
	// invalid pass), or a connection that was never made (the replica is
	// down): no effect.
	Refused
	// Unknown: a 5xx, a timeout or a connection lost mid-call. The call
	// may have taken effect, now or later (a script already written to a
	// paused Redis runs when it resumes), or not at all.
	Unknown
)

func (o Outcome) String() string {
	return [...]string{"ok", "refused", "unknown"}[o]
}

// Op is one call of one place (member), as its client saw it. A member's
// ops are sequential: each is sent after the previous one ended.
type Op struct {
	Member  string
	Kind    Kind
	Sent    time.Time // client clock, when the request was sent
	Ended   time.Time // client clock, when the answer (or the error) came
	Outcome Outcome
	// Status and Adm are an OK enter's or status call's answer: WAITING,
	// ENTERED (with the admission's start, ms on the Redis clock, from the
	// entry pass's adm claim) or NOT_WAITING.
	Status string
	Adm    int64
	// Estimated: a WAITING answered from a replica's snapshot of the line
	// (far from the head, no Redis), not by status.lua.
	Estimated bool
}

// Interval is one refill interval from the history list: its start (ms,
// Redis clock) and the admissions made in it.
type Interval struct {
	StartMS  int64
	Admitted int64
}

// Snapshot is the queue's state read from Redis after the run.
type Snapshot struct {
	Waiting map[string]int64 // member -> arrival number
	Entered map[string]int64 // member -> admission start (ms)
	// History holds the ended intervals, oldest first, then the interval
	// in progress (its start and the admissions so far).
	History []Interval
}

// Record is everything the checks look at: one phase.
type Record struct {
	RefillSize int
	// MaxRequest is the longest a call may take: the service's request
	// timeout plus slack.
	MaxRequest time.Duration
	// Settle is how long after a fault heals an Unknown write may still
	// take effect (a script queued in a paused Redis).
	Settle time.Duration
	// Faults are the windows in which a fault was in force (start, heal).
	Faults []Window
	Ops    []Op // in the order they ended, per member
	Snap   Snapshot
	// Anonymous counts enters whose answer never came and so carried no
	// credential: each may have left a place no client knows (a phantom).
	Anonymous int
}

// Window is a time span on the client clock.
type Window struct{ Start, End time.Time }

// Violation is one broken invariant.
type Violation struct {
	Kind   string // lost, duplicated, inversion, both, over_rate, slow, phantom
	Detail string
}

// Report is what the checks found in one run.
type Report struct {
	Members, Ops, Admissions int
	Unknown                  int // calls whose effect the client could not know
	Lost, Duplicated         int
	Inversions               int // admitted users that someone ahead of them was not admitted before
	Both                     int // waiting and entered at once (Redis), or put back after an admission (client)
	OverRate                 int // intervals with more than refill_size admissions
	Phantoms                 int // places in Redis that no client holds, beyond the anonymous enters
	Slow                     int // calls longer than MaxRequest
	Longest                  time.Duration
	FIFOBase                 int // enters the FIFO check compared (clean, admitted or still waiting)
	WaitingAtEnd             int // still in line when the run ended
	Estimated                int // WAITING answers from a replica's snapshot (the far-back path)
	Violations               []Violation
}

// Failed reports whether any invariant was broken.
func (r Report) Failed() bool { return len(r.Violations) > 0 }

// maxExamples bounds the violations kept per kind, so a broken run still
// prints a readable report.
const maxExamples = 5

// add counts one violation of kind in count, the kind's own counter, and
// keeps its example while the kind has fewer than maxExamples.
func (r *Report) add(kind string, count *int, format string, args ...any) {
	*count++
	if *count <= maxExamples {
		r.Violations = append(r.Violations, Violation{kind, fmt.Sprintf(format, args...)})
	}
}

// epoch is one enter of one member and what followed until the next
// enter: the unit of "admitted once" and of the FIFO order.
type epoch struct {
	member     string
	sent, ack  time.Time
	clean      bool  // acknowledged, sent while nothing was uncertain: its place in the order is known
	adm        int64 // first admission seen (0: none)
	endedEarly bool  // left, done or entered again before any admission was seen
	last       bool  // the member's last epoch
}

// Check runs every invariant over a run.
func Check(run Record) Report {
	rep := Report{Ops: len(run.Ops), WaitingAtEnd: len(run.Snap.Waiting)}
	byMember := map[string][]Op{}
	var order []string
	for _, op := range run.Ops {
		if op.Outcome == Unknown {
			rep.Unknown++
		}
		if op.Estimated {
			rep.Estimated++
		}
		if d := op.Ended.Sub(op.Sent); d > rep.Longest {
			rep.Longest = d
		}
		if d := op.Ended.Sub(op.Sent); d > run.MaxRequest {
			rep.add("slow", &rep.Slow, "%s %s took %s, more than %s", op.Member, op.Kind, d.Round(time.Millisecond), run.MaxRequest)
		}
		if op.Member == "" {
			continue // an enter that never got a credential (Anonymous)
		}
		if _, ok := byMember[op.Member]; !ok {
			order = append(order, op.Member)
		}
		byMember[op.Member] = append(byMember[op.Member], op)
	}
	rep.Members = len(order)

	var epochs []*epoch
	admissions := map[string][]int64{} // member -> distinct admissions seen
	for _, m := range order {
		epochs = append(epochs, checkMember(&rep, run, m, byMember[m], admissions)...)
	}

	// Redis: nobody both waiting and entered.
	for m := range run.Snap.Waiting {
		if _, ok := run.Snap.Entered[m]; ok {
			rep.add("both", &rep.Both, "%s is in both the waiting and the entered set", m)
		}
	}
	// Redis: places no client holds. An enter whose answer never came
	// may have made one each.
	phantoms := 0
	for _, set := range []map[string]int64{run.Snap.Waiting, run.Snap.Entered} {
		for m := range set {
			if _, ok := byMember[m]; !ok {
				phantoms++
			}
		}
	}
	if phantoms > run.Anonymous {
		rep.add("phantom", &rep.Phantoms, "%d places in Redis belong to no client, but only %d enters went unanswered", phantoms, run.Anonymous)
	}

	checkFIFO(&rep, run, epochs)
	checkRate(&rep, run, admissions)
	return rep
}

// checkMember walks one member's calls in order and returns its epochs.
//
// Uncertainty: after an Unknown enter, leave or done, the member's state
// is not known until the fault has healed and Settle has passed (the call
// may still land); answers to calls sent before then are not held against
// the service, and the epoch it may have begun is left out of the FIFO
// check. "Lost" needs a place the member must still hold: one that an
// acknowledged enter made, and that no leave or done since may have ended
// (an Unknown enter keeps that promise: it either moved the place to the
// back or changed nothing).
func checkMember(rep *Report, run Record, m string, ops []Op, admissions map[string][]int64) []*epoch {
	w := &memberWalk{rep: rep, run: run, m: m, admissions: admissions}
	for _, op := range ops {
		certain := !op.Sent.Before(w.uncertainUntil)
		switch op.Kind {
		case Enter:
			w.enter(op, certain)
		case Status:
			w.status(op, certain)
		case Leave, Done:
			w.end(op)
		}
	}
	w.finish()
	return w.epochs
}

// memberWalk is what checkMember knows of one member at each of its calls.
type memberWalk struct {
	rep        *Report
	run        Record
	m          string
	admissions map[string][]int64 // shared by every member's walk

	epochs         []*epoch
	cur            *epoch
	mustHold       bool      // the member holds a place it must still hold
	uncertainUntil time.Time // answers to calls sent before it are not held against the service
	seenWaiting    bool      // the current epoch was seen WAITING after its admission was seen
	lostReported   bool
}

// admitted notes an admission seen of the member, once.
func (w *memberWalk) admitted(adm int64) {
	if !slices.Contains(w.admissions[w.m], adm) {
		w.admissions[w.m] = append(w.admissions[w.m], adm)
	}
}

// enter begins an epoch, unless the enter was refused: acknowledged, it
// made a place the member must hold; Unknown, the member's state is
// uncertain until it settles.
func (w *memberWalk) enter(op Op, certain bool) {
	if op.Outcome == Refused {
		return
	}
	if w.cur != nil && w.cur.adm == 0 {
		w.cur.endedEarly = true
	}
	w.cur = &epoch{member: w.m, sent: op.Sent, ack: op.Ended, clean: op.Outcome == OK && certain}
	w.epochs = append(w.epochs, w.cur)
	w.seenWaiting = false
	if op.Outcome != OK {
		w.uncertainUntil = settledAfter(w.run, op)
		return
	}
	w.mustHold = true
	if op.Status == "ENTERED" {
		w.cur.adm = op.Adm
		w.admitted(op.Adm)
	}
}

// status checks an answered status call against what the member holds;
// an admission counts even while uncertain, the rest only once certain.
func (w *memberWalk) status(op Op, certain bool) {
	if op.Outcome != OK {
		return
	}
	if op.Status == "ENTERED" {
		w.admitted(op.Adm)
	}
	if !certain {
		return
	}
	if w.cur == nil {
		w.cur = &epoch{member: w.m, sent: op.Sent, ack: op.Ended}
		w.epochs = append(w.epochs, w.cur)
	}
	if op.Status != "NOT_WAITING" {
		// Nothing is in flight: the place is there, and must stay until a
		// leave or done.
		w.mustHold = true
	}
	switch op.Status {
	case "ENTERED":
		w.entered(op)
	case "WAITING":
		if w.cur.adm != 0 && !w.seenWaiting {
			w.seenWaiting = true
			w.rep.add("both", &w.rep.Both, "%s seen WAITING after its admission at %d, with no enter since", w.m, w.cur.adm)
		}
	case "NOT_WAITING":
		if w.mustHold && !w.lostReported {
			w.lostReported = true
			w.rep.add("lost", &w.rep.Lost, "%s held a place (enter acknowledged, never left) but is NOT_WAITING", w.m)
		}
		w.mustHold = false
	}
}

// entered checks a certain ENTERED answer against the current epoch: one
// admission per enter, never before the enter was sent, never put back.
func (w *memberWalk) entered(op Op) {
	cur := w.cur
	if cur.clean && op.Adm < cur.sent.UnixMilli()-1 {
		// Admitted before the enter was even sent (Redis and the clients
		// share the host's clock): the admission is the earlier place's,
		// and the acknowledged enter was rolled back.
		w.rep.add("lost", &w.rep.Lost, "%s: the enter acknowledged at %s was rolled back: admitted at %d, before it was sent",
			w.m, cur.ack.Format(time.RFC3339Nano), op.Adm)
		cur.clean = false
	}
	if cur.adm == 0 {
		cur.adm = op.Adm
	} else if cur.adm != op.Adm {
		w.rep.add("duplicated", &w.rep.Duplicated, "%s admitted at %d and again at %d for one enter", w.m, cur.adm, op.Adm)
		cur.adm = op.Adm
	} else if w.seenWaiting {
		w.rep.add("both", &w.rep.Both, "%s seen ENTERED, then WAITING, then ENTERED again for one enter", w.m)
	}
}

// end is a leave or done that may have ended the place, unless refused.
func (w *memberWalk) end(op Op) {
	if op.Outcome == Refused {
		return
	}
	w.mustHold = false
	if w.cur != nil && w.cur.adm == 0 {
		w.cur.endedEarly = true
	}
	if op.Outcome == Unknown {
		w.uncertainUntil = settledAfter(w.run, op)
	}
}

// finish marks the member's last epoch; Redis has the last word on a
// member still holding a place.
func (w *memberWalk) finish() {
	if w.cur != nil {
		w.cur.last = true
	}
	if adm, ok := w.run.Snap.Entered[w.m]; ok {
		w.admitted(adm)
		if w.cur != nil && w.cur.clean && !w.cur.endedEarly && w.cur.adm == 0 {
			w.cur.adm = adm
		}
	}
}

// settledAfter is when an Unknown call can no longer take effect: Settle
// after it ended, or after the fault it met healed, whichever is later.
func settledAfter(run Record, op Op) time.Time {
	end := op.Ended
	for _, f := range run.Faults {
		if !op.Ended.Before(f.Start) && f.End.After(end) {
			end = f.End
		}
	}
	return end.Add(run.Settle)
}

// checkFIFO looks for inversions: A's enter was acknowledged (WAITING)
// before B's enter was sent, neither entered again or left before being
// admitted, and yet B was admitted before A (A later, or never: A is still
// waiting at the end). Admissions of one tick share one start, so they
// never count as inverted among themselves.
func checkFIFO(rep *Report, run Record, epochs []*epoch) {
	var base []*epoch
	for _, e := range epochs {
		if !e.clean || e.endedEarly {
			continue
		}
		if e.adm == 0 {
			// Never admitted: only a member still waiting at the end
			// is known to be behind everyone admitted.
			if _, waiting := run.Snap.Waiting[e.member]; !waiting || !e.last {
				continue
			}
		}
		base = append(base, e)
	}
	rep.FIFOBase = len(base)
	byAck := slices.Clone(base)
	sort.Slice(byAck, func(i, j int) bool { return byAck[i].ack.Before(byAck[j].ack) })
	// prefixMax[i] is the latest admission among byAck[:i+1] (never:
	// +inf), with the member it belongs to.
	prefixMax := make([]int64, len(byAck))
	who := make([]*epoch, len(byAck))
	for i, e := range byAck {
		v := e.adm
		if v == 0 {
			v = math.MaxInt64
		}
		prefixMax[i], who[i] = v, e
		if i > 0 && prefixMax[i-1] >= v {
			prefixMax[i], who[i] = prefixMax[i-1], who[i-1]
		}
	}
	for _, b := range base {
		if b.adm == 0 {
			continue
		}
		// The epochs acknowledged before b was sent.
		n := sort.Search(len(byAck), func(i int) bool { return !byAck[i].ack.Before(b.sent) })
		if n > 0 && prefixMax[n-1] > b.adm {
			a := who[n-1]
			when := "never"
			if a.adm != 0 {
				when = fmt.Sprintf("at %d", a.adm)
			}
			rep.add("inversion", &rep.Inversions, "%s was waiting before %s entered, but %s was admitted at %d and %s %s", a.member, b.member, b.member, b.adm, a.member, when)
		}
	}
}

// checkRate checks admissions per interval twice: the history's own
// counts, and the admissions the clients saw (and Redis still holds),
// bucketed by the history's interval starts.
func checkRate(rep *Report, run Record, admissions map[string][]int64) {
	limit := int64(run.RefillSize)
	h := run.Snap.History
	for _, iv := range h {
		if iv.Admitted > limit {
			rep.add("over_rate", &rep.OverRate, "the interval from %d admitted %d (history), more than %d", iv.StartMS, iv.Admitted, limit)
		}
	}
	for _, list := range admissions {
		rep.Admissions += len(list)
	}
	if len(h) == 0 {
		return
	}
	// Each admission finds its interval by binary search, so their order
	// does not matter.
	counts := make([]int64, len(h))
	for _, list := range admissions {
		for _, adm := range list {
			i := sort.Search(len(h), func(i int) bool { return h[i].StartMS > adm }) - 1
			if i >= 0 {
				counts[i]++
			}
		}
	}
	for i, c := range counts {
		if c > limit {
			rep.add("over_rate", &rep.OverRate, "the interval from %d admitted %d users the clients saw, more than %d", h[i].StartMS, c, limit)
		}
	}
}
