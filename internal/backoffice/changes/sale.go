package changes

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// SaleStore closes and reopens a queue's sale (*queue.Inspector).
type SaleStore interface {
	Close(ctx context.Context, queue string, c queue.Closing, by json.RawMessage) (queue.CloseResult, error)
	Reopen(ctx context.Context, queue string, by json.RawMessage) (queue.CloseResult, error)
}

// Sale is the operator's use case of closing a sale (sold out) and
// reopening it: the change, then its audit entry with the actor, as
// Settings.Apply does for the settings; the events (settings_changed,
// sale_closed, sale_reopened) are written by the store with the change.
type Sale[V any] struct {
	Store SaleStore
	Audit Auditor
	View  func(ctx context.Context, queue string) (V, error)
}

// SaleChange is one close or reopen: Closing is nil for a reopen.
type SaleChange struct {
	Queue   string
	Closing *queue.Closing
	Who     audit.Entry
	Log     *slog.Logger
}

// Apply closes (c.Closing set) or reopens c.Queue's sale, audits it as
// "close" or "reopen" (changes: closed, and a close's message and
// reopening) and returns the view after.
func (s *Sale[V]) Apply(ctx context.Context, c SaleChange) (V, error) {
	var zero V
	var by json.RawMessage
	if c.Who.Actor != nil && !c.Who.Actor.IsZero() {
		by, _ = json.Marshal(*c.Who.Actor) // two strings always encode
	}
	action := "reopen"
	var res queue.CloseResult
	var err error
	if c.Closing != nil {
		action = "close"
		res, err = s.Store.Close(ctx, c.Queue, *c.Closing, by)
	} else {
		res, err = s.Store.Reopen(ctx, c.Queue, by)
	}
	if err != nil {
		return zero, err
	}
	c.Log.Info("sale "+action, "queue", c.Queue, "changed", res.Changed)
	e := c.Who
	e.Queue, e.Action = c.Queue, action
	closed := c.Closing != nil
	e.Changes = []audit.Change{{Field: "closed", Old: audit.Value(closed != res.Changed), New: audit.Value(closed)}}
	if closed {
		e.Changes = append(e.Changes, audit.Change{Field: "closed_message", New: audit.Value(c.Closing.Message)})
		if !c.Closing.ReopensAt.IsZero() {
			e.Changes = append(e.Changes, audit.Change{Field: "reopens_at", New: audit.Value(c.Closing.ReopensAt.UTC().Format(time.RFC3339))})
		}
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if _, err := s.Audit.Record(actx, e); err != nil {
		b, _ := json.Marshal(e)
		c.Log.Error("audit log not written; the change was made", "err", err, "entry", string(b))
	}
	return s.View(ctx, c.Queue)
}
