package queue

// The outboxes' switch and their drop counts, for the webhook workers
// (internal/ops/webhook). Both live in the queue's config HASH: the scripts
// read there whether to write events (common_events.lua, events_on) and count
// there what a full outbox dropped. The queue owns that HASH, so the
// workers, which consume the outboxes, ask the queue rather than write it.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Why the scripts drop an event (a field "webhooks_dropped_<reason>" of
// the config HASH each).
const (
	// DropOutboxFull: the events outbox held 100,000 entries (nobody
	// delivered it for long).
	DropOutboxFull = "outbox_full"
	// DropBulkFull: the bulk outbox held its cap (a flood of leaving, or
	// a receiver too slow for it).
	DropBulkFull = "bulk_full"
)

// DropReasons are every reason a drop is counted by.
var DropReasons = []string{DropOutboxFull, DropBulkFull}

// SetOutbox turns queue's events on or off (its scripts write the outboxes
// only while on) and sets the bulk outbox's cap, in entries.
func (s *Store) SetOutbox(ctx context.Context, queue string, on bool, bulkMax int) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	flag := "0"
	if on {
		flag = "1"
	}
	_, err = WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return s.rdb.HSet(ctx, q.keys.config, "webhooks", flag, "webhooks_bulk_max", strconv.Itoa(bulkMax)).Result()
	})
	if err != nil {
		return fmt.Errorf("queue: set outbox: %w", err)
	}
	return nil
}

// TakeOutboxDrops returns how many events queue's scripts dropped from a
// full outbox since the last call, by reason (only reasons with some), and
// resets the counts in the same step: each drop is reported once, by
// whichever replica asks first.
func (s *Store) TakeOutboxDrops(ctx context.Context, queue string) (map[string]int64, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	fields := make([]any, len(DropReasons))
	for i, r := range DropReasons {
		fields[i] = "webhooks_dropped_" + r
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return dropsScript.Run(ctx, s.rdb, []string{q.keys.config}, fields...).Int64Slice()
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("queue: outbox drops: %w", err)
	}
	out := map[string]int64{}
	for i, n := range v {
		if n > 0 && i < len(DropReasons) {
			out[DropReasons[i]] = n
		}
	}
	return out, nil
}
