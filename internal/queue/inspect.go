package queue

import (
	"context"
	"fmt"
	"time"
)

// The operator's side: what the back office and the start-up read and
// change, apart from the request path (store.go). None of it is on a
// user's hot path.

// Seed stores the default settings of every queue in Redis where none are
// stored yet, so the first replica to start decides and later replicas, and
// later restarts, keep what operators set.
func (s *Store) Seed(ctx context.Context) error {
	for _, name := range s.names {
		cfg := s.queues[name].keys.config
		defaults := []any{"refill_size", s.defaultArgs[0], "refill_interval_ms", s.defaultArgs[1],
			"session_ttl_ms", s.defaultArgs[2], "max_active", s.defaultArgs[3], "abandon_after_ms", s.defaultArgs[4]}
		defaults = append(defaults, s.defaults.Adapt.update().adaptFields()...)
		for i := 0; i < len(defaults); i += 2 {
			_, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (bool, error) {
				return s.rdb.HSetNX(ctx, cfg, defaults[i].(string), defaults[i+1]).Result()
			})
			if err != nil {
				return fmt.Errorf("queue: seed %s: %w", name, err)
			}
		}
	}
	return nil
}

// Info returns counts and settings of a queue.
func (s *Store) Info(ctx context.Context, queue string) (Info, error) {
	q, err := s.queue(queue)
	if err != nil {
		return Info{}, err
	}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return infoScript.Run(ctx, s.rdb, q.infoKeys, s.defaultArgs[:]...).Int64Slice()
	})
	if err != nil {
		return Info{}, fmt.Errorf("queue: info: %w", err)
	}
	return newInfo(queue, v, s.defaults.SessionMax)
}

// Overview is what the back office shows of a queue: its snapshot (Info)
// and its history (History), two round trips, with the admissions of the
// last minute worked out from both.
func (s *Store) Overview(ctx context.Context, queue string) (Overview, error) {
	info, err := s.Info(ctx, queue)
	if err != nil {
		return Overview{}, err
	}
	points, err := s.History(ctx, queue)
	if err != nil {
		return Overview{}, err
	}
	return Overview{Info: info, History: points, AdmittedLastMinute: admittedSince(info, points, info.Now.Add(-time.Minute))}, nil
}

// admittedSince counts the admissions of the interval in progress and of
// the intervals of points that ended after since. An interval ends where
// the next begins; the last one at the last tick.
func admittedSince(info Info, points []HistoryPoint, since time.Time) int64 {
	n := info.AdmittedThisInterval
	for i, p := range points {
		end := info.LastTickAt
		if i+1 < len(points) {
			end = points[i+1].At
		}
		if end.After(since) {
			n += p.Admitted
		}
	}
	return n
}

// UpdateSettings stores the fields of u that are set, in one command.
// Every replica's next script reads them from Redis: a new refill size or
// cap takes effect at the next tick everywhere, a pause at once.
func (s *Store) UpdateSettings(ctx context.Context, queue string, u Update) error {
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if err := u.Validate(); err != nil {
		return err
	}
	var fields []any
	if u.RefillSize != nil {
		fields = append(fields, "refill_size", *u.RefillSize)
	}
	if u.MaxActive != nil {
		fields = append(fields, "max_active", *u.MaxActive)
	}
	if u.MaxWaiting != nil {
		fields = append(fields, "max_waiting", *u.MaxWaiting)
	}
	if u.ChallengeDifficulty != nil {
		fields = append(fields, "challenge_difficulty", *u.ChallengeDifficulty)
	}
	if u.AbandonAfter != nil {
		fields = append(fields, "abandon_after_ms", u.AbandonAfter.Milliseconds())
	}
	if u.OpensAt != nil {
		fields = append(fields, "opens_at_ms", unixMilliOrZero(*u.OpensAt))
	}
	if u.PrequeueFrom != nil {
		fields = append(fields, "prequeue_from_ms", unixMilliOrZero(*u.PrequeueFrom))
	}
	if u.WebhookURL != nil {
		fields = append(fields, "webhook_url", *u.WebhookURL)
	}
	if u.Title != nil {
		fields = append(fields, "title", encodeText(*u.Title))
	}
	if u.Message != nil {
		fields = append(fields, "message", encodeText(*u.Message))
	}
	if u.Paused != nil {
		fields = append(fields, "paused", boolInt(*u.Paused))
	}
	fields = append(fields, u.adaptFields()...)
	if len(fields) == 0 {
		return nil
	}
	// One script stores them and writes the settings_changed event, if
	// the queue has webhooks (settings.lua).
	_, err = WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return settingsScript.Run(ctx, s.rdb, []string{q.keys.config, q.keys.events}, fields...).Int64()
	})
	if err != nil {
		return fmt.Errorf("queue: update settings: %w", err)
	}
	if u.Title != nil || u.Message != nil {
		s.texts.forget(queue, nil) // this replica's next page shows the change
	}
	return nil
}

// SetRefillSize stores a new refill size (UpdateSettings with just it).
func (s *Store) SetRefillSize(ctx context.Context, queue string, n int) error {
	return s.UpdateSettings(ctx, queue, Update{RefillSize: &n})
}

// History returns the applied ticks kept for a queue, oldest first.
func (s *Store) History(ctx context.Context, queue string) ([]HistoryPoint, error) {
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	raw, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]string, error) {
		return s.rdb.LRange(ctx, q.keys.history, 0, -1).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: history: %w", err)
	}
	points := make([]HistoryPoint, 0, len(raw))
	for _, entry := range raw {
		p, err := parseHistoryEntry(entry)
		if err != nil {
			return nil, err
		}
		points = append(points, p)
	}
	return points, nil
}

func unixMilliOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
