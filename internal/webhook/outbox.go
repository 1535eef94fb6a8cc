package webhook

// A queue's two outboxes, and what the scripts dropped from them.

import (
	"context"
	_ "embed"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/rediskeys"
)

// outbox is one of a queue's two outbox STREAMs (emit and emit_bulk in
// the queue's common.lua). The events outbox holds admissions, their ends,
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

// Why the scripts drop an event, the metric's reason label: its outbox
// was at its cap (the scripts count them in the queue's config HASH,
// field "webhooks_dropped_" + reason).
const (
	// DropOutboxFull: the events outbox held 100,000 entries (nobody
	// delivered it for long).
	DropOutboxFull = "outbox_full"
	// DropBulkFull: the bulk outbox held BulkMax entries (a flood of
	// leaving, or a receiver too slow for it).
	DropBulkFull = "bulk_full"
)

// DropReasons are every reason a drop is counted by.
var DropReasons = []string{DropOutboxFull, DropBulkFull}

// bulkMaxField is the config HASH field where the workers keep BulkMax
// for the scripts (emit_bulk).
const bulkMaxField = "webhooks_bulk_max"

//go:embed drops.lua
var dropsLua string

var dropsScript = redis.NewScript(dropsLua)

// drops takes queue q's drop counts, by reason, resetting them: each drop
// is reported by one replica only.
func (w *Workers) drops(ctx context.Context, q string) (map[string]int64, error) {
	fields := make([]any, len(DropReasons))
	for i, r := range DropReasons {
		fields[i] = "webhooks_dropped_" + r
	}
	v, err := dropsScript.Run(ctx, w.rdb, []string{rediskeys.Config(q)}, fields...).Int64Slice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := map[string]int64{}
	for i, n := range v {
		if n > 0 && i < len(DropReasons) {
			out[DropReasons[i]] = n
		}
	}
	return out, nil
}
