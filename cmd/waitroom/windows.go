package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom/internal/actor"
	"github.com/waitroom/waitroom/internal/audit"
	"github.com/waitroom/waitroom/internal/queue"
	"github.com/waitroom/waitroom/internal/scheduler"
)

// windowAudit is the tick observer that audits the schedule's windows
// (issue 30): the one tick call that started or ended a window, on
// whichever replica, reports it (queue.TickResult.Window), and this
// records it with the schedule as its actor; then it tells next (nil:
// nobody) as before.
type windowAudit struct {
	log  *audit.Log
	next scheduler.Observer
	slog *slog.Logger
}

func (o windowAudit) Tick(q string, res queue.TickResult, took time.Duration, err error) {
	if w := res.Window; w != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		for _, a := range []struct {
			did    bool
			action string
		}{{w.Ended, "window_ended"}, {w.Started, "window_started"}} {
			if !a.did {
				continue
			}
			e := audit.Entry{Queue: q, Action: a.action, Actor: &actor.Actor{Kind: actor.KindSchedule, Name: w.At.UTC().Format(time.RFC3339)},
				Changes: []audit.Change{{Field: "window", New: audit.Value(w.At.UTC().Format(time.RFC3339))}}}
			if _, err := o.log.Record(ctx, e); err != nil {
				o.slog.Error("audit log not written; the window changed", "queue", q, "action", a.action, "err", err)
			}
		}
		cancel()
	}
	if o.next != nil {
		o.next.Tick(q, res, took, err)
	}
}
