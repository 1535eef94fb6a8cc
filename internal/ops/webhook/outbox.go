package webhook

// A queue's two outboxes, and what the scripts dropped from them.

import (
	"context"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// outbox is one of a queue's two outbox STREAMs (emit and emit_bulk in
// the queue's common_events.lua). The events outbox holds admissions, their ends,
// the operator's removals and settings: the room's rate and the operator
// bound them. The bulk outbox holds a user's own leaving, which anyone can
// cause at will by entering and leaving: it is capped apart (BulkMax) and
// read after the other, so no flood of it holds an admission back (issue
// 26.11: 280 enter+leave cycles delayed an admitted event by 14.4 s).
type outbox struct {
	key string
	// idPrefix begins its events' ids, "<queue>." or "<queue>.bulk.":
	// entry ids are only unique within one stream.
	idPrefix string
	bulk     bool
}

func outboxes(q string) (events, bulk outbox) {
	return outbox{key: rediskeys.Events(q), idPrefix: q + "."},
		outbox{key: rediskeys.BulkEvents(q), idPrefix: q + ".bulk.", bulk: true}
}

// Why the scripts drop an event, the metric's reason label (the queue
// counts them: queue.TakeOutboxDrops).
const (
	DropOutboxFull = queue.DropOutboxFull
	DropBulkFull   = queue.DropBulkFull
)

// DropReasons are every reason a drop is counted by.
var DropReasons = queue.DropReasons

// drops takes queue q's drop counts, by reason, resetting them: each drop
// is reported by one replica only.
func (w *Workers) drops(ctx context.Context, q string) (map[string]int64, error) {
	return w.opts.Outbox.TakeOutboxDrops(ctx, q)
}
