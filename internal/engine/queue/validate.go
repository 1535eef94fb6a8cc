package queue

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits of the inputs a store accepts.
const (
	MaxUserIDBytes = 128
	MaxRefillSize  = 100000
	// MaxMaxActive bounds the cap on active users (0 is no cap).
	MaxMaxActive = 10000000
	// MaxMaxWaiting bounds the line's cap (0: no cap).
	MaxMaxWaiting = 100_000_000
	// MaxChallengeDifficulty bounds the proof of work a queue asks for: 32
	// leading zero bits is hours of a browser's time already.
	MaxChallengeDifficulty = 32
	// MaxAbandonAfter bounds abandon_after (0 turns abandonment off).
	MaxAbandonAfter = 24 * time.Hour
	// MaxWebhookURLBytes bounds a queue's webhook_url.
	MaxWebhookURLBytes = 2048
)

var queueNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidateQueueName reports whether name can be a queue: the name goes in
// a hash tag, so braces and the like are out.
func ValidateQueueName(name string) error {
	if !queueNameRE.MatchString(name) {
		return fmt.Errorf("%w: %q", ErrInvalidQueueName, name)
	}
	return nil
}

// ValidateUserID reports whether id is acceptable as a user id.
func ValidateUserID(id string) error {
	if id == "" || len(id) > MaxUserIDBytes || !utf8.ValidString(id) {
		return ErrInvalidUserID
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return ErrInvalidUserID
		}
	}
	return nil
}

// ValidateSettings checks settings before they are used or stored: every
// setting of Catalog it holds, then what no row says.
func ValidateSettings(s Settings) error {
	for _, st := range Catalog {
		if v, ok := st.Of(s); ok {
			if err := st.Check(v); err != nil {
				return err
			}
		}
	}
	if s.SessionMax != 0 && s.SessionMax < s.SessionTTL {
		return errors.New("queue: a sliding session's maximum (WAITROOM_SESSION_MAX) must be at least the session TTL")
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	return s.Price.Validate()
}

// Validate checks that every limit is off or sane.
func (l Limits) Validate() error {
	for name, v := range map[string]Limit{
		"enter per client": l.EnterPerClient, "enter per place": l.EnterPerPlace,
		"status per client": l.StatusPerClient, "status per place": l.StatusPerPlace,
		"enter per network": l.EnterPerNetwork, "enter per site": l.EnterPerSite,
	} {
		if v.Rate < 0 || math.IsNaN(v.Rate) || math.IsInf(v.Rate, 0) || (v.Rate > 0 && (v.Burst < 1 || v.Burst > 1_000_000)) {
			return fmt.Errorf("queue: rate limit %s: rate %v, burst %d: want a rate ≥ 0 and, with a rate, a burst of 1…1000000", name, v.Rate, v.Burst)
		}
	}
	if l.HeldReturnPerTick < 0 || l.HeldReturnPerTick > 1_000_000 {
		return fmt.Errorf("queue: held places returned per network per tick %d: want 0…1000000", l.HeldReturnPerTick)
	}
	return nil
}

// Validate checks every field, so an update is applied whole or not at
// all; the first at fault, in Catalog order, is a *FieldError.
func (u Update) Validate() error {
	for _, st := range Catalog {
		if v, ok := u.Get(st.Name); ok {
			if err := st.Check(v); err != nil {
				return err
			}
		}
	}
	if u.OpensAt != nil && u.PrequeueFrom != nil && !u.PrequeueFrom.IsZero() &&
		(u.OpensAt.IsZero() || u.PrequeueFrom.After(*u.OpensAt)) {
		return fieldError("prequeue_from", "must not be after opens_at, and needs one")
	}
	return nil
}
