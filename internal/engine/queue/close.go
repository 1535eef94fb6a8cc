package queue

// Sold out: the operator closes the line with a message (close.lua). The
// closed flag lives in the config HASH beside the settings, so every
// script reads it with the HMGET it already makes (configState): a queue
// never closed pays no command for it. The message is read only once the
// flag says closed, through the text a replica caches (PageText).

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"
)

// Bounds of a closing's message: each language's text at most
// MaxClosedMessageRunes, MaxTextLangs languages, and all of them, as
// JSON, at most MaxClosedMessageBytes, so the public line document that
// carries the message stays small (internal/web/linedoc).
const (
	MaxClosedMessageRunes = 280
	MaxClosedMessageBytes = 2048
	// MaxReopenAhead is how far ahead a reopening may be announced.
	MaxReopenAhead = 366 * 24 * time.Hour
)

// Closing is what the operator says when closing the sale: a message by
// language tag ("en", "ko") and, optionally, when sales reopen (only
// told: nothing reopens by itself).
type Closing struct {
	Message   map[string]string
	ReopensAt time.Time // zero: not said
}

// Validate checks c at now: language tags for keys, each text one line
// of valid UTF-8 without control characters or bidirectional overrides,
// at most MaxClosedMessageRunes, at least one language, the whole at most
// MaxClosedMessageBytes; a reopening after now and within MaxReopenAhead.
func (c Closing) Validate(now time.Time) error {
	n := 0
	for _, t := range c.Message {
		if t != "" {
			n++
		}
	}
	if n == 0 || !checkText(c.Message, MaxClosedMessageRunes, false) {
		return fieldError("message", "must give, by language tag (at most %d), one line of at most %d characters without control characters",
			MaxTextLangs, MaxClosedMessageRunes)
	}
	if len(encodeText(c.Message)) > MaxClosedMessageBytes {
		return fieldError("message", "must be at most %d bytes as JSON", MaxClosedMessageBytes)
	}
	if !c.ReopensAt.IsZero() && (!c.ReopensAt.After(now) || c.ReopensAt.Sub(now) > MaxReopenAhead) {
		return fieldError("reopens_at", "must be in the future, at most a year ahead")
	}
	return nil
}

// In is the message in lang, else in English, else in the first
// language by tag; "" when there is none.
func (c Closing) In(lang string) string {
	if t := c.Message[lang]; t != "" {
		return t
	}
	if t := c.Message["en"]; t != "" {
		return t
	}
	langs := make([]string, 0, len(c.Message))
	for l, t := range c.Message {
		if t != "" {
			langs = append(langs, l)
		}
	}
	if len(langs) == 0 {
		return ""
	}
	sort.Strings(langs)
	return c.Message[langs[0]]
}

// CloseResult is what Close and Reopen did.
type CloseResult struct {
	// At is when the sale was closed (Reopen: when it had been; zero if
	// it was open).
	At time.Time
	// Changed is false when the call found the sale as it asked (closed
	// already: the message and reopening are replaced all the same).
	Changed bool
}

// Close closes queue's sale with c's message: from now, enters are
// refused (ErrSaleClosed), every status of a place not inside says Closed,
// and the ticks drop the waiting places (ReasonClosed) a chunk a call.
// by names who closed it (as Update.By), for the events. The site hears
// settings_changed and sale_closed.
func (in *Inspector) Close(ctx context.Context, queue string, c Closing, by json.RawMessage) (CloseResult, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return CloseResult{}, err
	}
	if err := c.Validate(time.Now()); err != nil {
		return CloseResult{}, err
	}
	var reopens int64
	told := map[string]any{"closed": true, "closed_message": c.Message}
	if !c.ReopensAt.IsZero() {
		reopens = c.ReopensAt.UnixMilli()
		told["reopens_at"] = c.ReopensAt.UTC().Format(time.RFC3339)
	}
	return s.runClose(ctx, q, queue, "close", encodeText(c.Message), reopens, told, by)
}

// Reopen undoes Close: enters are taken again. The places dropped stay
// dropped (their holders enter again). The site hears settings_changed
// and sale_reopened.
func (in *Inspector) Reopen(ctx context.Context, queue string, by json.RawMessage) (CloseResult, error) {
	s := in.s
	q, err := s.queue(queue)
	if err != nil {
		return CloseResult{}, err
	}
	return s.runClose(ctx, q, queue, "reopen", "", 0, map[string]any{"closed": false}, by)
}

// Closing reads queue's closing as the back office shows it: the
// message and reopening (empty while open; not cached).
func (in *Inspector) Closing(ctx context.Context, queue string) (Closing, error) {
	t, err := in.s.Text(ctx, queue)
	return t.Closed, err
}

func (s *Store) runClose(ctx context.Context, q *queueRef, queue, op, message string, reopens int64, told map[string]any, by json.RawMessage) (CloseResult, error) {
	event, _ := json.Marshal(told) // strings and bools always encode
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		return closeScript.Run(ctx, s.rdb, []string{q.keys.config, q.keys.events},
			append(q.args, op, message, reopens, string(event), string(by))...).Int64Slice()
	})
	if err != nil {
		return CloseResult{}, fmt.Errorf("queue: %s: %w", op, err)
	}
	if len(v) != 2 {
		return CloseResult{}, fmt.Errorf("queue: %s: unexpected reply %v", op, v)
	}
	s.texts.forget(queue, nil) // this replica's next answer has the message
	return CloseResult{At: msTime(v[0]), Changed: v[1] == 1}, nil
}

// closingOf reads the closing from the config HASH's fields as close.lua
// stores them: the message (JSON) and the reopening (unix ms).
func closingOf(message, reopens any) Closing {
	c := Closing{Message: textField(message)}
	if s, _ := reopens.(string); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			c.ReopensAt = msTime(n)
		}
	}
	return c
}
