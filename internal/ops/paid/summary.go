package paid

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// ErrUnknownQueue is a summary asked of a queue the recorder does not
// count.
var ErrUnknownQueue = errors.New("paid: unknown queue")

// Bits describes a distribution of difficulties in leading zero bits
// (nearest rank: P50 is the smallest difficulty at or below which half
// the events fall). All 0 when there were none.
type Bits struct {
	P50 int `json:"p50"`
	P99 int `json:"p99"`
	Max int `json:"max"`
}

// HumanChecks counts the human check's steps.
type HumanChecks struct {
	Asked       uint64 `json:"asked"`
	Passed      uint64 `json:"passed"`
	Failed      uint64 `json:"failed"`      // the provider said no
	Unavailable uint64 `json:"unavailable"` // the provider could not judge: the proof of work stood in
}

// Summary is what a queue's visitors paid over the last Minutes, every
// replica's counts added (another replica's last FlushEvery may be
// missing; this replica's is included).
type Summary struct {
	Minutes int `json:"minutes"`
	// Places is the places made; Priced those whose proof carried any
	// bits; BitsPaid the bits their proofs carried (none: 0).
	Places   uint64 `json:"places"`
	Priced   uint64 `json:"priced"`
	BitsPaid Bits   `json:"bits_paid"`
	// Challenges is the proof-of-work challenges issued, BitsAsked the
	// difficulty they asked.
	Challenges uint64      `json:"challenges"`
	BitsAsked  Bits        `json:"bits_asked"`
	Human      HumanChecks `json:"human_checks"`
}

// histogram is counts by bits.
type histogram [MaxBits + 1]uint64

func (h *histogram) total() uint64 {
	var n uint64
	for _, c := range h {
		n += c
	}
	return n
}

// rank is the smallest bits at which the cumulative count reaches the
// nearest rank of quantile p (0 < p ≤ 1).
func (h *histogram) rank(p float64) int {
	n := h.total()
	if n == 0 {
		return 0
	}
	want := uint64(p*float64(n) + 0.999999999) // ceil, without float noise on exact ranks
	want = max(want, 1)
	var seen uint64
	for b, c := range h {
		seen += c
		if seen >= want {
			return b
		}
	}
	return MaxBits
}

func (h *histogram) bits() Bits {
	out := Bits{P50: h.rank(0.50), P99: h.rank(0.99)}
	for b := MaxBits; b >= 0; b-- {
		if h[b] > 0 {
			out.Max = b
			break
		}
	}
	return out
}

// Summary reads what queue's visitors paid over the last minutes (1…
// MaxMinutes; the current minute counts as one): one pipeline of HGETALL,
// plus this replica's counts not yet flushed.
func (r *Recorder) Summary(ctx context.Context, queue string, minutes int) (Summary, error) {
	minutes = min(max(minutes, 1), MaxMinutes)
	if r == nil { // nothing recorded
		return Summary{Minutes: minutes}, nil
	}
	c := r.queues[queue]
	if c == nil {
		return Summary{}, ErrUnknownQueue
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	now := r.now()
	p := r.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, minutes)
	for i := range minutes {
		cmds[i] = p.HGetAll(ctx, rediskeys.Paid(queue, minute(now.Add(-time.Duration(i)*time.Minute))))
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Summary{}, err
	}
	var places, asked histogram
	var human [len(humanResults)]uint64
	for _, cmd := range cmds {
		for f, v := range cmd.Val() {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				continue
			}
			kind, arg, _ := strings.Cut(f, ":")
			switch kind {
			case "p", "a":
				b, err := strconv.Atoi(arg)
				if err != nil || b < 0 || b > MaxBits {
					continue
				}
				if kind == "p" {
					places[b] += n
				} else {
					asked[b] += n
				}
			case "h":
				for i, name := range humanResults {
					if arg == name {
						human[i] += n
					}
				}
			}
		}
	}
	// This replica's counts since its last flush: what the operator just
	// did shows at once.
	for i := range places {
		places[i] += c.places[i].Load()
		asked[i] += c.asked[i].Load()
	}
	for i := range human {
		human[i] += c.human[i].Load()
	}
	s := Summary{
		Minutes:    minutes,
		Places:     places.total(),
		Priced:     places.total() - places[0],
		BitsPaid:   places.bits(),
		Challenges: asked.total(),
		BitsAsked:  asked.bits(),
		Human:      HumanChecks{Asked: human[0], Passed: human[1], Failed: human[2], Unavailable: human[3]},
	}
	return s, nil
}
