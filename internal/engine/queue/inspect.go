package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// The operator's side: what the back office and the start-up read and
// change, apart from the request path (store.go). None of it is on a
// user's hot path.

// Inspector is the operator's side of a store: seeding and comparing the
// settings the environment gives, reading and changing a queue's setting
// values, its schedule, its history and line statistics, and removing a
// user on the operator's word. It works on the store's queues, Redis
// client and defaults, each call within the store's bound, and keeps no
// state of its own: make one wherever it is needed.
type Inspector struct {
	s *Store
}

// NewInspector returns the operator's side of s.
func NewInspector(s *Store) *Inspector { return &Inspector{s: s} }

// Remove takes user out of queue on the operator's word: out of the line,
// or its admission ended; a user who asks later is told they were
// removed. before is where the user stood, for the audit log: a status,
// then the leave (two round trips; not an error when the user holds no
// place).
func (in *Inspector) Remove(ctx context.Context, queue, user string) (before Ticket, err error) {
	s := in.s
	before, err = s.Status(ctx, queue, Caller{User: user})
	if err != nil {
		return Ticket{}, err
	}
	if err := s.leave(ctx, queue, user, ReasonRemoved); err != nil {
		return Ticket{}, err
	}
	return before, nil
}

// Seed stores the default settings of every queue in Redis where none are
// stored yet (the rows of Catalog the environment seeds), so the first
// replica to start decides and later replicas, and later restarts, keep
// what operators set.
func (in *Inspector) Seed(ctx context.Context) error {
	s := in.s
	var defaults []any
	rows, values := s.seeds()
	for i, st := range rows {
		defaults = append(defaults, st.Hash, st.encode(values[i]))
	}
	for _, name := range s.names {
		cfg := s.queues[name].keys.config
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

// seeds are the rows of Catalog the environment seeds, with the
// environment's values: every SeedAlways row, and a SeedIfSet one only when
// its value is not zero (unset). Seed stores them; EnvDiff compares them.
func (s *Store) seeds() (rows []Setting, values []any) {
	for _, st := range Catalog {
		v, ok := st.Of(s.defaults)
		if ok && (st.Seed == SeedAlways || st.Seed == SeedIfSet && !isZero(v)) {
			rows, values = append(rows, st), append(values, v)
		}
	}
	return rows, values
}

// EnvDiff names the settings the environment seeds whose value stored for
// queue differs from the environment's, as "name=stored (env: value)"
// ("refill_interval=5s (env: 20s)"). The environment only seeds a queue
// Redis does not know yet: these are the environment's settings that do
// not apply. A setting seeded only when set (SeedIfSet) and not stored is
// the environment's, so it never differs; one the environment leaves at
// zero (unset, the same to Seed) says nothing the operator could miss, so
// a value stored for it, say the automatic rate switched on in the back
// office, is not named at every start.
func (in *Inspector) EnvDiff(ctx context.Context, queue string) ([]string, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return nil, err
	}
	rows, values := s.seeds()
	fields := make([]string, len(rows))
	for i, st := range rows {
		fields[i] = st.Hash
	}
	stored, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]any, error) {
		return s.rdb.HMGet(ctx, q.keys.config, fields...).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("queue: env diff: %w", err)
	}
	var d []string
	for i, st := range rows {
		if got, ok := stored[i].(string); ok && got != st.encode(values[i]) {
			d = append(d, fmt.Sprintf("%s=%s (env: %s)", st.label(), st.show(got), st.show(st.encode(values[i]))))
		}
	}
	return d, nil
}

// Overview is what the back office shows of a queue: its snapshot (Info)
// and its history (History), two round trips, with the admissions of the
// last minute worked out from both.
func (in *Inspector) Overview(ctx context.Context, queue string) (Overview, error) {
	s := in.s
	info, err := s.Info(ctx, queue)
	if err != nil {
		return Overview{}, err
	}
	points, err := in.History(ctx, queue)
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
func (in *Inspector) UpdateSettings(ctx context.Context, queue string, u Update) error {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return err
	}
	if err := u.Validate(); err != nil {
		return err
	}
	// The HASH fields to store, and those the site is told of.
	var fields []any
	told := map[string]string{}
	for _, st := range Catalog {
		if v, ok := u.Get(st.Name); ok {
			fields = append(fields, st.Hash, st.encode(v))
			if !st.Private {
				told[st.Hash] = st.encode(v)
			}
		}
	}
	if len(fields) == 0 {
		return nil
	}
	event, _ := json.Marshal(told) // strings always encode
	by := string(u.By)
	// A change of the opening's times may seal a draw with a fresh seed
	// (draw_seal.lua), drawn here, used only if it needs one.
	seal := []any{"", "", ""}
	if u.OpensAt != nil || u.PrequeueFrom != nil {
		seed, commitment, id := freshSeal()
		seal = []any{seed, commitment, id}
	}
	// One script stores them and writes the settings_changed event, if
	// the queue has webhooks (settings.lua).
	n, err := WaitFor(ctx, s.timeout, func(ctx context.Context) (int64, error) {
		return settingsScript.Run(ctx, s.rdb, []string{q.keys.config, q.keys.events, q.keys.tick, q.keys.lanes, q.keys.drawSeed},
			append(append([]any{string(event), by}, seal...), fields...)...).Int64()
	})
	if err != nil {
		return fmt.Errorf("queue: update settings: %w", err)
	}
	if n < 0 {
		return ErrDrawSealed
	}
	if u.OpensAt != nil || u.PrequeueFrom != nil {
		s.drawStates.forget(queue, nil) // this replica's next answer shows the seal
	}
	if u.Title != nil || u.Message != nil {
		s.texts.forget(queue, nil) // this replica's next page shows the change
	}
	return nil
}

// History returns the applied ticks kept for a queue, oldest first.
func (in *Inspector) History(ctx context.Context, queue string) ([]HistoryPoint, error) {
	s := in.s
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
