// Package changes holds the operator's use cases that span the queue
// and the audit log, apart from HTTP (internal/web/adminapi decodes, calls one
// method, encodes): a change of a queue's settings, audited with the
// queue as the back office saw it before and after.
package changes

import (
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// Store is what a change of settings needs of the queue store
// (*queue.Inspector, its operator's side).
type Store interface {
	UpdateSettings(ctx context.Context, queue string, u queue.Update) error
}

// Auditor records a change (*audit.Log).
type Auditor interface {
	Record(ctx context.Context, e audit.Entry) (audit.Entry, error)
}

// auditTimeout bounds the audit record of a change that is made.
const auditTimeout = 2 * time.Second

// Settings changes queues' settings. V is a queue as the back office sees
// it: its JSON fields named as the settings are (queue.Setting.Name) are
// the audit log's old and new values.
type Settings[V any] struct {
	Store Store
	Audit Auditor
	View  func(ctx context.Context, queue string) (V, error)
}

// Change is one operator's change of a queue's settings.
type Change struct {
	Queue string
	// Action names it in the audit log: "settings", or "refill_size" for
	// the first published endpoint.
	Action string
	// Requested are the settings as the operator sent them; Update is
	// what they mean, already checked by the caller's parser.
	Requested map[string]json.RawMessage
	Update    queue.Update
	// Who made it: the entry's actor, client address and request id (the
	// rest is filled in).
	Who audit.Entry
	Log *slog.Logger
}

// Apply makes the change c and audits it with the view before and after;
// it returns the view after. Once the change is made it is audited even
// if the view after cannot be read, or the caller has gone.
func (s *Settings[V]) Apply(ctx context.Context, c Change) (V, error) {
	var zero V
	before, err := s.View(ctx, c.Queue)
	if err != nil {
		return zero, err
	}
	if c.Who.Actor != nil && !c.Who.Actor.IsZero() {
		c.Update.By, _ = json.Marshal(*c.Who.Actor) // the settings_changed event names them too; two strings always encode
	}
	if err := s.Store.UpdateSettings(ctx, c.Queue, c.Update); err != nil {
		return zero, err
	}
	c.Log.Info("settings changed", "queue", c.Queue, "fields", slices.Sorted(maps.Keys(c.Requested)))
	after, viewErr := s.View(ctx, c.Queue)
	afterView := &after
	if viewErr != nil {
		afterView = nil
	}
	e := c.Who
	e.Queue, e.Action, e.Changes = c.Queue, c.Action, Changes(c.Requested, before, afterView)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditTimeout)
	defer cancel()
	if _, err := s.Audit.Record(ctx, e); err != nil {
		b, _ := json.Marshal(e)
		c.Log.Error("audit log not written; the change was made", "err", err, "entry", string(b))
	}
	return after, viewErr
}

// Changes are the settings a request named, each with its value in the
// queue's view before and after the change (after nil: the view could not
// be read, and the values requested stand for it). It knows no setting by
// name, so a new setting is audited as soon as the view shows it; one the
// view does not show is recorded with the value requested and an unknown
// (null) old value. A private setting (queue.Setting.Private, a webhook
// URL that may carry the receiver's token) is recorded by host.
func Changes[V any](requested map[string]json.RawMessage, before V, after *V) []audit.Change {
	old, cur := viewFields(&before), viewFields(after)
	changes := make([]audit.Change, 0, len(requested))
	for _, name := range slices.Sorted(maps.Keys(requested)) {
		c := audit.Change{Field: name, Old: old[name], New: cur[name]}
		if after == nil || c.Old == nil && c.New == nil {
			c.New = requested[name]
		}
		if st, ok := queue.Lookup(name); ok && st.Private {
			c.New = urlHost(requested[name])
		}
		changes = append(changes, c)
	}
	return changes
}

// urlHost is a requested URL as the audit log shows it: its host ("" for
// none).
func urlHost(raw json.RawMessage) json.RawMessage {
	var v string
	_ = json.Unmarshal(raw, &v)
	if u, err := url.Parse(v); err == nil && v != "" {
		return audit.Value(u.Host)
	}
	return audit.Value("")
}

// viewFields is a view as its JSON fields; a field left out (omitempty)
// is absent, which the audit shows as null.
func viewFields[V any](v *V) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if v != nil {
		b, _ := json.Marshal(v) // plain fields: cannot fail
		_ = json.Unmarshal(b, &m)
	}
	return m
}
