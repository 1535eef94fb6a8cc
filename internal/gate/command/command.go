// Package command carries out what the order page says back to waitroom
// in its answers (the response header Waitroom-Command, gate.HeaderCommand)
// or through the API (POST /api/v1/queues/{queue}/commands): done ends the
// admission its pass names now, so the slot goes to the next person;
// extend renews it as a sliding session's check does. A command acts only
// on the admission of a valid pass, is bounded per pass on each replica,
// is recorded in the queue's audit log with the actor {"kind":"origin"}
// when it changed something, and counted (Options.Count) whatever it did.
package command

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"

	"github.com/waitroom/waitroom/gate"
	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/pass"
)

// Results of a command, the metric's result label and the API's answer.
const (
	// ResultOK: done ended the admission; extend made it end later.
	ResultOK = "ok"
	// ResultUnchanged: extend on an admission that already ends as late
	// as the queue allows.
	ResultUnchanged = "unchanged"
	// ResultNotCurrent: the pass's admission had already ended.
	ResultNotCurrent = "not_current"
	// ResultNoPass: the request carried no valid pass for the queue; the
	// command did nothing.
	ResultNoPass = "no_pass"
	// ResultLimited: more commands for this pass than PerPass allows.
	ResultLimited = "limited"
	// ResultUnsupported: extend where sessions do not slide.
	ResultUnsupported = "unsupported"
	// ResultUnknown: a header value that names no command.
	ResultUnknown = "unknown"
	// ResultFailed: Redis could not be asked.
	ResultFailed = "failed"
)

// Results are every result, for a metric's series.
var Results = []string{ResultOK, ResultUnchanged, ResultNotCurrent, ResultNoPass, ResultLimited, ResultUnsupported, ResultUnknown, ResultFailed}

// Commands are every command label: the two commands, and "other" for a
// value that names neither.
var Commands = []string{gate.CommandDone, gate.CommandExtend, Other}

// Other is the command label of a value that names no command.
const Other = "other"

// Label is the metric's command label of a header value.
func Label(cmd string) string {
	if cmd == gate.CommandDone || cmd == gate.CommandExtend {
		return cmd
	}
	return Other
}

// Action is the audit log's action of each command.
const (
	ActionDone   = "origin_done"
	ActionExtend = "origin_extend"
)

// Store is what the commands change: the queue's admissions.
type Store interface {
	Done(ctx context.Context, queue, user string, admittedAt time.Time) (bool, error)
	Extend(ctx context.Context, queue, user string, start time.Time) (bool, error)
}

// Per-pass bound: a pass may issue PerPassBurst of each command at once
// and one a second after, on each replica; what is past it is answered limited
// without asking Redis. A page answering extend on each of its 30
// resources costs Redis two calls, and 10,000 calls with one pass two
// and then one a second.
const (
	PerPassBurst = 2
	PerPassEvery = time.Second
	// maxTracked bounds the passes whose budget a replica remembers.
	maxTracked = 100_000
)

// Options are what Runner is made of.
type Options struct {
	Store  Store
	Passes *pass.Verifier
	// Audit records the commands that changed something (nil: not
	// recorded).
	Audit *audit.Log
	// Count hears every command: queue ("" when no valid pass named one),
	// command label and result (nil: not counted).
	Count func(queue, command, result string)
	Log   *slog.Logger
}

// Runner carries out commands.
type Runner struct {
	o  Options
	mu sync.Mutex
	// budgets: queue+" "+jti+" "+command -> its token bucket
	budgets *simplelru.LRU[string, *rate.Limiter]
}

// New returns a Runner for o. Store, Passes and Log are required.
func New(o Options) (*Runner, error) {
	if o.Store == nil || o.Passes == nil || o.Log == nil {
		return nil, errors.New("command: Store, Passes and Log are required")
	}
	if o.Count == nil {
		o.Count = func(string, string, string) {}
	}
	budgets, err := simplelru.NewLRU[string, *rate.Limiter](maxTracked, nil)
	if err != nil {
		return nil, fmt.Errorf("command: %w", err)
	}
	return &Runner{o: o, budgets: budgets}, nil
}

// Request is one command: what was said, the pass it came with (as the
// gate checked it, or as the API was sent it) and for which queue.
type Request struct {
	Queue   string // the queue the pass must name
	Command string // the header's value: done, extend, or anything else
	Pass    string // "": none
	// Client and RequestID go into the audit entry.
	Client    string
	RequestID string
}

// Run carries out r and returns its result. It never fails: what went
// wrong is its result (failed, logged).
func (x *Runner) Run(ctx context.Context, r Request) string {
	label := Label(r.Command)
	result, queueLabel := x.run(ctx, r, label)
	x.o.Count(queueLabel, label, result)
	return result
}

func (x *Runner) run(ctx context.Context, r Request, label string) (result, queueLabel string) {
	if label == Other {
		return ResultUnknown, ""
	}
	c, err := x.o.Passes.Verify(r.Pass)
	if err != nil || c.Queue != r.Queue {
		return ResultNoPass, ""
	}
	if !x.allow(c, label) {
		return ResultLimited, c.Queue
	}
	var changed bool
	if label == gate.CommandDone {
		changed, err = x.o.Store.Done(ctx, c.Queue, c.Subject, c.AdmittedAt)
		if err == nil && !changed {
			err = queue.ErrNotCurrent
		}
	} else {
		changed, err = x.o.Store.Extend(ctx, c.Queue, c.Subject, c.AdmittedAt)
	}
	switch {
	case errors.Is(err, queue.ErrNotCurrent):
		return ResultNotCurrent, c.Queue
	case errors.Is(err, queue.ErrNoSliding):
		return ResultUnsupported, c.Queue
	case err != nil:
		x.o.Log.WarnContext(ctx, "origin command failed", "queue", c.Queue, "command", label, "err", err)
		return ResultFailed, c.Queue
	case !changed:
		return ResultUnchanged, c.Queue
	}
	x.record(ctx, r, c, label)
	return ResultOK, c.Queue
}

// allow spends one of c's pass's budget for a command on this replica.
// Each command has its own: a page that answers extend to every request
// never spends the done that ends the admission.
func (x *Runner) allow(c pass.Claims, label string) bool {
	key := c.Queue + " " + c.ID + " " + label
	x.mu.Lock()
	defer x.mu.Unlock()
	l, ok := x.budgets.Get(key)
	if !ok {
		l = rate.NewLimiter(rate.Every(PerPassEvery), PerPassBurst)
		x.budgets.Add(key, l)
	}
	return l.Allow()
}

// record writes a command that changed something to the queue's audit
// log: which admission (its member), never the pass.
func (x *Runner) record(ctx context.Context, r Request, c pass.Claims, label string) {
	if x.o.Audit == nil {
		return
	}
	action := ActionDone
	if label == gate.CommandExtend {
		action = ActionExtend
	}
	_, err := x.o.Audit.Record(ctx, audit.Entry{
		ClientIP: r.Client, Queue: c.Queue, Action: action, Actor: &actor.Actor{Kind: actor.KindOrigin, Name: actor.KindOrigin},
		Target: c.Subject, RequestID: r.RequestID, Changes: []audit.Change{},
	})
	if err != nil {
		x.o.Log.WarnContext(ctx, "origin command: audit", "queue", c.Queue, "err", err)
	}
}
