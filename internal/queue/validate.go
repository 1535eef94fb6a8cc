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

// ValidateSettings checks settings before they are used or stored.
func ValidateSettings(s Settings) error {
	if err := checkRefillSize(s.RefillSize); err != nil {
		return err
	}
	if s.RefillInterval < time.Millisecond {
		return errors.New("queue: refill interval must be at least 1ms")
	}
	if s.SessionTTL < time.Millisecond {
		return errors.New("queue: session TTL must be at least 1ms")
	}
	if s.SessionMax != 0 && s.SessionMax < s.SessionTTL {
		return errors.New("queue: a sliding session's maximum (WAITROOM_SESSION_MAX) must be at least the session TTL")
	}
	if err := checkMaxActive(s.MaxActive); err != nil {
		return err
	}
	if err := s.Limits.Validate(); err != nil {
		return err
	}
	if err := s.Price.Validate(); err != nil {
		return err
	}
	if err := s.Adapt.update().validateAdapt(); err != nil {
		return err
	}
	return checkAbandonAfter(s.AbandonAfter)
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
	return nil
}

// Validate checks every field, so an update is applied whole or not at all.
func (u Update) Validate() error {
	if u.RefillSize != nil {
		if err := checkRefillSize(*u.RefillSize); err != nil {
			return err
		}
	}
	if u.MaxActive != nil {
		if err := checkMaxActive(*u.MaxActive); err != nil {
			return err
		}
	}
	if u.MaxWaiting != nil {
		if err := checkMaxWaiting(*u.MaxWaiting); err != nil {
			return err
		}
	}
	if u.ChallengeDifficulty != nil {
		if err := checkDifficulty(*u.ChallengeDifficulty); err != nil {
			return err
		}
	}
	if u.AbandonAfter != nil {
		if err := checkAbandonAfter(*u.AbandonAfter); err != nil {
			return err
		}
	}
	if err := u.validateAdapt(); err != nil {
		return err
	}
	if u.WebhookURL != nil && len(*u.WebhookURL) > MaxWebhookURLBytes {
		return ErrInvalidWebhookURL
	}
	if u.Title != nil && !checkText(*u.Title, MaxTitleRunes, false) {
		return ErrInvalidTitle
	}
	if u.Message != nil && !checkText(*u.Message, MaxMessageRunes, true) {
		return ErrInvalidMessage
	}
	if u.OpensAt != nil && u.PrequeueFrom != nil && !u.PrequeueFrom.IsZero() &&
		(u.OpensAt.IsZero() || u.PrequeueFrom.After(*u.OpensAt)) {
		return ErrInvalidOpening
	}
	return nil
}

// The bounds of the settings an operator changes live, checked the same
// way for the defaults (ValidateSettings) and for an Update.
func checkRefillSize(n int) error {
	if n < 1 || n > MaxRefillSize {
		return ErrInvalidRefill
	}
	return nil
}

func checkMaxActive(n int) error {
	if n < 0 || n > MaxMaxActive {
		return ErrInvalidMaxActive
	}
	return nil
}

func checkMaxWaiting(n int) error {
	if n < 0 || n > MaxMaxWaiting {
		return ErrInvalidMaxWaiting
	}
	return nil
}

func checkDifficulty(n int) error {
	if n < 0 || n > MaxChallengeDifficulty {
		return ErrInvalidDifficulty
	}
	return nil
}

func checkAbandonAfter(d time.Duration) error {
	if d < 0 || d > MaxAbandonAfter {
		return ErrInvalidAbandon
	}
	return nil
}
