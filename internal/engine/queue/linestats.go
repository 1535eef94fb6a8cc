package queue

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// What the line felt like, for the operator: how long people
// waited, how far off the ETA their page gave at entry was, how long
// admissions lasted, who gave up, who came and who went in. The scripts
// measure at each tick (tick_stats.lua), without a record
// per waiting user; this file reads what they kept.

// SampleKind is what a Sample measured; the values are common.lua's STAT_*.
type SampleKind int

const (
	// TimeInLine runs from entry to admission: 0 for a direct admission,
	// to within half a refill interval for one from the line (tick_stats.lua).
	TimeInLine SampleKind = iota + 1
	// ETAError is the actual admission less the one the page predicted at
	// entry (Ticket.ETA): positive when it came later than said.
	ETAError
	// TimeInside runs from the admission's start to done or expiry.
	TimeInside
)

// Sample is a group of Count people whose Kind measured Value.
type Sample struct {
	Kind  SampleKind
	Value time.Duration
	Count int64
	Lane  string // the lane of those measured ("": the general lane, or all for time inside)
}

// StatsWindow is how far back LineReport's figures look.
const StatsWindow = 10 * time.Minute

// Spread summarizes one kind of sample in the window: how many, and the
// median and 90th percentile (nearest rank; zero when Count is 0).
type Spread struct {
	Count    int64
	P50, P90 time.Duration
}

// LineStats are a queue's figures over the last StatsWindow.
type LineStats struct {
	Window                           time.Duration
	TimeInLine, ETAError, TimeInside Spread
	// From the history's intervals that began in the window: who came,
	// who was admitted, whose place was dropped as abandoned.
	Arrivals, Admitted, Abandoned int64
	// AbandonmentRate is Abandoned / (Abandoned + Admitted): of those who
	// left the line or never needed it, the share who had given up (0
	// when there were none).
	AbandonmentRate float64
	// Per minute over the span those intervals cover (0 when none ended).
	ArrivalsPerMinute, AdmissionsPerMinute float64
	Active                                 int64 // admissions not ended, now
}

// LineReport is a queue's overview (Inspector.Overview) with its figures.
type LineReport struct {
	Overview
	Stats LineStats
	// Lanes are each lane's own, by name, for a queue with
	// lanes: the history of its line and the time in line of those it
	// admitted in the window. The general lane's is the queue's less
	// theirs.
	Lanes []LaneReport
}

// LaneReport is one lane's part of a LineReport.
type LaneReport struct {
	Lane       string
	History    []HistoryPoint // its line's intervals, oldest first (direct admissions are the queue's only)
	TimeInLine Spread
}

// LineReport reads a queue's overview and its samples (three round trips;
// the samples list holds at most a few thousand short entries) and works
// out its figures for the last StatsWindow of the Redis clock.
func (in *Inspector) LineReport(ctx context.Context, queue string) (LineReport, error) {
	s := in.s
	o, err := in.Overview(ctx, queue)
	if err != nil {
		return LineReport{}, err
	}
	q, _ := s.queue(queue) // Overview checked the name
	raw, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]string, error) {
		return s.rdb.LRange(ctx, q.keys.samples, 0, -1).Result()
	})
	if err != nil {
		return LineReport{}, fmt.Errorf("queue: samples: %w", err)
	}
	since := o.Now.Add(-StatsWindow)
	var samples []Sample
	for _, entry := range raw {
		at, sample, err := parseSample(entry)
		if err != nil {
			return LineReport{}, err
		}
		if !at.Before(since) {
			samples = append(samples, sample)
		}
	}
	lanes, err := s.laneReports(ctx, q, samples)
	if err != nil {
		return LineReport{}, err
	}
	return LineReport{Overview: o, Stats: lineStats(o, samples, since), Lanes: lanes}, nil
}

// laneReports reads each lane's history (one round trip, for a queue with
// lanes only) and works out its time in line from the window's samples.
func (s *Store) laneReports(ctx context.Context, q *queueRef, samples []Sample) ([]LaneReport, error) {
	lanes, err := s.knownLanes(ctx, q)
	if err != nil || len(lanes) == 0 {
		return nil, err
	}
	raws, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]*redis.StringSliceCmd, error) {
		cmds := make([]*redis.StringSliceCmd, len(lanes))
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, l := range lanes {
				cmds[i] = p.LRange(ctx, keysForLine(q.keys.name, l).laneHistory, 0, -1)
			}
			return nil
		})
		return cmds, err
	})
	if err != nil {
		return nil, fmt.Errorf("queue: lane history: %w", err)
	}
	out := make([]LaneReport, len(lanes))
	for i, l := range lanes {
		out[i].Lane = l
		for _, entry := range raws[i].Val() {
			p, err := parseHistoryEntry(entry)
			if err != nil {
				return nil, err
			}
			out[i].History = append(out[i].History, p)
		}
		var own []Sample
		for _, sm := range samples {
			if sm.Lane == l {
				own = append(own, sm)
			}
		}
		out[i].TimeInLine = spread(own, TimeInLine)
	}
	return out, nil
}

// Abandonment is the share of the places reaching the head in the last
// StatsWindow that were dropped as abandoned (LineStats.AbandonmentRate),
// from the overview's history alone: no samples read.
func (o Overview) Abandonment() float64 {
	return lineStats(o, nil, o.Now.Add(-StatsWindow)).AbandonmentRate
}

// lineStats works out the figures from the overview and the samples of
// the window that began at since.
func lineStats(o Overview, samples []Sample, since time.Time) LineStats {
	st := LineStats{
		Window:     StatsWindow,
		TimeInLine: spread(samples, TimeInLine),
		ETAError:   spread(samples, ETAError),
		TimeInside: spread(samples, TimeInside),
		Active:     o.Entered,
	}
	var from time.Time
	for _, p := range o.History {
		if p.At.Before(since) {
			continue
		}
		if from.IsZero() {
			from = p.At
		}
		st.Arrivals += p.Arrivals
		st.Admitted += p.Admitted
		st.Abandoned += p.Abandoned
	}
	if n := st.Abandoned + st.Admitted; n > 0 {
		st.AbandonmentRate = float64(st.Abandoned) / float64(n)
	}
	// The counted intervals run from the first one's start to the last
	// tick, which ended the last one.
	if span := o.LastTickAt.Sub(from); !from.IsZero() && span > 0 {
		st.ArrivalsPerMinute = float64(st.Arrivals) / span.Minutes()
		st.AdmissionsPerMinute = float64(st.Admitted) / span.Minutes()
	}
	return st
}

// spread summarizes the samples of kind.
func spread(samples []Sample, kind SampleKind) Spread {
	var of []Sample
	var sp Spread
	for _, s := range samples {
		if s.Kind == kind && s.Count > 0 {
			of = append(of, s)
			sp.Count += s.Count
		}
	}
	if sp.Count == 0 {
		return sp
	}
	slices.SortFunc(of, func(a, b Sample) int { return cmp.Compare(a.Value, b.Value) })
	rank := func(p float64) time.Duration {
		want := int64(math.Ceil(p * float64(sp.Count)))
		var seen int64
		for _, s := range of {
			if seen += s.Count; seen >= want {
				return s.Value
			}
		}
		return of[len(of)-1].Value
	}
	sp.P50, sp.P90 = rank(0.5), rank(0.9)
	return sp
}

// parseSample reads a samples entry, "at_ms:kind:value_ms:count".
func parseSample(entry string) (time.Time, Sample, error) {
	parts := strings.Split(entry, ":")
	var n [4]int64
	lane := ""
	if len(parts) == len(n)+1 && CheckLaneName(parts[len(n)]) { // a lane's (tick_stats.lua, save_samples)
		lane, parts = parts[len(n)], parts[:len(n)]
	}
	if len(parts) != len(n) {
		return time.Time{}, Sample{}, fmt.Errorf("queue: malformed sample %q", entry)
	}
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return time.Time{}, Sample{}, fmt.Errorf("queue: malformed sample %q", entry)
		}
		n[i] = v
	}
	return time.UnixMilli(n[0]), Sample{Kind: SampleKind(n[1]), Value: ms(n[2]), Count: n[3], Lane: lane}, nil
}
