package humancheck

import (
	"log/slog"
	"time"
)

// SetClock makes c read the time from now: the circuit's probe interval
// is tested without waiting it out.
func SetClock(c *Checker, now func() time.Time) {
	c.mu.Lock()
	c.now = now
	c.mu.Unlock()
}

// ProbeEvery is the circuit's probe interval, for tests.
const ProbeEvery = probeEvery

// UsedKey is the key marking token used, for tests.
func UsedKey(token string) string { return usedKey(token) }

var discard = slog.New(slog.DiscardHandler)
