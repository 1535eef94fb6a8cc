// Package audit keeps a log of the operators' changes to each queue in
// Redis: when (the Redis clock), from which client address, what changed,
// old and new values. Each queue's log is one bounded list, newest first,
// so every replica writes and reads the same log and its memory is capped.
//
// Entries hold only what callers put in them; callers must never put a
// secret (the admin token, a place credential) in one.
package audit

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// MaxEntries is how many entries each queue's log keeps.
const MaxEntries = 1000

//go:embed record.lua
var recordLua string

var recordScript = redis.NewScript(recordLua)

// Change is one value an operator changed. Old and New are JSON values
// as the admin API shows them (null: none, or not known).
type Change struct {
	Field string          `json:"field"`
	Old   json.RawMessage `json:"old"`
	New   json.RawMessage `json:"new"`
}

// Entry is one change of a queue, by an operator or the service itself.
type Entry struct {
	// AtMS is when it was recorded, Redis clock, ms since the epoch; set
	// by Record.
	AtMS     int64  `json:"at_ms,omitempty"`
	ClientIP string `json:"client_ip"`
	Queue    string `json:"queue"`
	// Action names the admin call: "settings" (PATCH), "refill_size"
	// (PUT .../refill-size), "remove_user" (DELETE .../users/{id}).
	Action string `json:"action"`
	// Actor is who made the change: a person (oidc), an API token, the
	// break-glass admin token, the schedule, or the automatic rate
	// (internal/ops/autorate, whose Action is "automatic" too). Entries
	// written before actors were named have none (an operator's) or the
	// bare string "automatic", read as {automatic, automatic}.
	Actor *actor.Actor `json:"actor,omitempty"`
	// Target is what the action was applied to, beside the queue (the
	// removed user's id).
	Target    string   `json:"target,omitempty"`
	RequestID string   `json:"request_id,omitempty"`
	Changes   []Change `json:"changes"`
}

// Redis is the part of a go-redis client the log uses.
type Redis interface {
	redis.Scripter
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
}

// Log reads and writes the queues' audit logs.
type Log struct{ rdb Redis }

// New returns a log kept in rdb.
func New(rdb Redis) (*Log, error) {
	if rdb == nil {
		return nil, errors.New("audit: no Redis client")
	}
	return &Log{rdb: rdb}, nil
}

// Record adds e to the log of e.Queue, stamped with the Redis clock, and
// returns e as stored.
func (l *Log) Record(ctx context.Context, e Entry) (Entry, error) {
	if e.Queue == "" || e.Action == "" {
		return e, errors.New("audit: an entry needs a queue and an action")
	}
	e.AtMS = 0                                   // the script writes it first
	e.Changes = append([]Change{}, e.Changes...) // a copy: the caller's stays as it was
	for i, c := range e.Changes {
		// A nil RawMessage marshals as null; an empty one would not marshal.
		if len(c.Old) == 0 {
			e.Changes[i].Old = nil
		}
		if len(c.New) == 0 {
			e.Changes[i].New = nil
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return e, fmt.Errorf("audit: %w", err)
	}
	at, err := recordScript.Run(ctx, l.rdb, []string{rediskeys.Audit(e.Queue)}, b, MaxEntries).Int64()
	if err != nil {
		return e, fmt.Errorf("audit: record: %w", err)
	}
	e.AtMS = at
	return e, nil
}

// List returns up to n of queue's newest entries, newest first (n is
// capped at MaxEntries). An entry that cannot be read is skipped rather
// than hiding the rest.
func (l *Log) List(ctx context.Context, queue string, n int) ([]Entry, error) {
	if n <= 0 || n > MaxEntries {
		n = MaxEntries
	}
	raw, err := l.rdb.LRange(ctx, rediskeys.Audit(queue), 0, int64(n-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("audit: list: %w", err)
	}
	out := make([]Entry, 0, len(raw))
	for _, s := range raw {
		var e Entry
		if json.Unmarshal([]byte(s), &e) == nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// Value is v as a Change's Old or New: its JSON, or null if it has none.
func Value(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}
