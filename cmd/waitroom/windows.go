package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
)

// windowAudit is the tick observer that audits the schedule's windows:
// the one tick call that started or ended a window, on whichever
// replica, reports it (queue.TickResult.Window), and this records it with
// the schedule as its actor, the window and every setting it changed, old
// and new; then it tells next (nil: nobody) as before.
type windowAudit struct {
	log  *audit.Log
	next scheduler.Observer
	slog *slog.Logger
}

func (o windowAudit) Tick(q string, res queue.TickResult, took time.Duration, err error) {
	if w := res.Window; w != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		for _, e := range windowEntries(q, w) {
			if _, err := o.log.Record(ctx, e); err != nil {
				o.slog.Error("audit log not written; the window changed", "queue", q, "action", e.Action, "err", err)
			}
		}
		cancel()
	}
	if o.next != nil {
		o.next.Tick(q, res, took, err)
	}
}

// windowEntries are the audit entries of a tick call's change to the
// windows: the end first, then the start, each naming the window and the
// settings it changed.
func windowEntries(q string, w *queue.WindowChange) []audit.Entry {
	var out []audit.Entry
	for _, a := range []struct {
		did     bool
		action  string
		changes []queue.SettingChange
	}{{w.Ended, "window_ended", w.EndChanges}, {w.Started, "window_started", w.StartChanges}} {
		if !a.did {
			continue
		}
		at := w.At.UTC().Format(time.RFC3339)
		e := audit.Entry{Queue: q, Action: a.action, Actor: &actor.Actor{Kind: actor.KindSchedule, Name: at},
			Changes: []audit.Change{{Field: "window", New: audit.Value(at)}}}
		for _, c := range a.changes {
			e.Changes = append(e.Changes, audit.Change{Field: c.Field, Old: c.Old, New: c.New})
		}
		out = append(out, e)
	}
	return out
}
