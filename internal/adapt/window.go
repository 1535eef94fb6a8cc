package adapt

import (
	"slices"
	"sync"
	"time"
)

// WindowSize is how many of a queue's latest origin answers a replica
// keeps: enough for a p95 over several seconds of a busy page, bounded
// so that memory and the sort stay small however busy it is.
const WindowSize = 2048

// MinSamples is how many answers a window needs before its p95 is
// trusted; with fewer the controller holds (or uses a pushed report).
const MinSamples = 10

// Window is one replica's view of the origin's answers, per queue: the
// status and latency of each upstream answer through the reverse-proxy
// gate, or of each probe. Safe for concurrent use.
type Window struct {
	mu      sync.Mutex
	byQueue map[string]*ring
}

type sample struct {
	at   time.Time
	took time.Duration
	bad  bool
}

type ring struct {
	s    [WindowSize]sample
	next int
	n    int
}

// NewWindow returns an empty window.
func NewWindow() *Window { return &Window{byQueue: map[string]*ring{}} }

// Observe records one answer of queue's origin: its status (0: none came,
// the proxy gave up), how long it took to start, and when its request was
// sent. A 5xx or no answer counts as an error; a 4xx is the client's, not
// the origin's.
func (w *Window) Observe(queue string, status int, took time.Duration, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.byQueue[queue]
	if r == nil {
		r = &ring{}
		w.byQueue[queue] = r
	}
	r.s[r.next] = sample{at: at, took: took, bad: status == 0 || status >= 500}
	r.next = (r.next + 1) % WindowSize
	r.n = min(r.n+1, WindowSize)
}

// Signal is the p95 and error rate of queue's answers since since; ok is
// false with fewer than MinSamples of them.
func (w *Window) Signal(queue string, since time.Time) (Signal, bool) {
	return w.signal(queue, since, MinSamples)
}

func (w *Window) signal(queue string, since time.Time, least int) (Signal, bool) {
	w.mu.Lock()
	r := w.byQueue[queue]
	var took []time.Duration
	bad := 0
	if r != nil {
		for i := range r.n {
			s := r.s[i]
			if s.at.Before(since) {
				continue
			}
			took = append(took, s.took)
			if s.bad {
				bad++
			}
		}
	}
	w.mu.Unlock()
	if len(took) < least {
		return Signal{Samples: len(took)}, false
	}
	slices.Sort(took)
	// The nearest-rank p95: the smallest value at least 95 % of the
	// answers are no slower than.
	rank := (len(took)*95 + 99) / 100
	return Signal{P95: took[rank-1], ErrorRate: float64(bad) / float64(len(took)), Samples: len(took)}, true
}
