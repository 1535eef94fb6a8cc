// Package loglimit bounds what a client can make the service write to its
// log: strings taken from requests are cut to a fixed size, and a source
// of lines a client can trigger at will (net/http's own messages) is
// rate-limited, so that log volume never grows with what an attacker sends.
package loglimit

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// MaxString is how many bytes of a request-derived string (a path, a user
// id) a log line keeps.
const MaxString = 256

// String returns s cut to MaxString bytes (see Cut).
func String(s string) string { return Cut(s, MaxString) }

// Cut returns s if it has at most n bytes, else its first n bytes or
// fewer, cut between two runes, followed by a marker with s's length:
// "/aaaa…[+1048320 of 1048576 bytes]".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…[+" + strconv.Itoa(len(s)-cut) + " of " + strconv.Itoa(len(s)) + " bytes]"
}

// maxMessage bounds one rate-limited message.
const maxMessage = 1024

// Handler returns a handler that passes at most burst records per period
// to next and drops the rest; the first record let through after drops
// says how many were dropped ("dropped"). Messages are cut to 1 KiB.
func Handler(next slog.Handler, burst int, period time.Duration) slog.Handler {
	return &handler{next: next, shared: &bucket{burst: burst, period: period}}
}

type handler struct {
	next   slog.Handler
	shared *bucket
}

// bucket is a fixed window: burst records per period.
type bucket struct {
	burst  int
	period time.Duration

	mu      sync.Mutex
	start   time.Time // of the current window
	used    int
	dropped int
}

// take reports whether a record may pass, and how many were dropped since
// the last one that did.
func (b *bucket) take(now time.Time) (ok bool, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.start) >= b.period {
		b.start, b.used = now, 0
	}
	if b.used >= b.burst {
		b.dropped++
		return false, 0
	}
	b.used++
	dropped, b.dropped = b.dropped, 0
	return true, dropped
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	ok, dropped := h.shared.take(time.Now())
	if !ok {
		return nil
	}
	if len(r.Message) > maxMessage || dropped > 0 {
		out := slog.NewRecord(r.Time, r.Level, Cut(r.Message, maxMessage), r.PC)
		r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
		if dropped > 0 {
			out.AddAttrs(slog.Int("dropped", dropped))
		}
		r = out
	}
	return h.next.Handle(ctx, r)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	return &handler{next: h.next.WithAttrs(as), shared: h.shared}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(name), shared: h.shared}
}

// Every lets one event in each period be logged: a line for something
// that may happen at any rate (each use of a break-glass credential).
type Every struct{ b bucket }

// NewEvery returns an Every of period.
func NewEvery(period time.Duration) *Every { return &Every{b: bucket{burst: 1, period: period}} }

// Take reports whether this event is to be logged, and then how many
// happened since the last one logged, this one included.
func (e *Every) Take() (n int, ok bool) {
	ok, dropped := e.b.take(time.Now())
	return dropped + 1, ok
}

// Keyed is an Every per key: one line per cause in each period for
// events that repeat one cause at any rate (a store that is away fails
// every request), each with how many happened since its last line. At
// most max keys are kept: past it they are all forgotten at once, so a
// key chosen by clients can never grow memory, and each is logged again
// at its next event.
type Keyed struct {
	period time.Duration
	max    int
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*bucket
}

// NewKeyed returns a Keyed of period and max keys; now is the clock (nil:
// time.Now).
func NewKeyed(period time.Duration, max int, now func() time.Time) *Keyed {
	if now == nil {
		now = time.Now
	}
	return &Keyed{period: period, max: max, now: now, keys: map[string]*bucket{}}
}

// Take reports whether this event of key is to be logged, and then how
// many of key happened since its last one logged, this one included.
func (k *Keyed) Take(key string) (n int, ok bool) {
	k.mu.Lock()
	b, found := k.keys[key]
	if !found {
		if len(k.keys) >= k.max {
			clear(k.keys)
		}
		b = &bucket{burst: 1, period: k.period}
		k.keys[key] = b
	}
	k.mu.Unlock()
	ok, dropped := b.take(k.now())
	return dropped + 1, ok
}
