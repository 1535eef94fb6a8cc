package autorate

import (
	"slices"
	"sync"
	"time"
)

// WindowSize is how many of a queue's latest order page answers a replica
// keeps: enough for a p95 over several seconds of a busy page, bounded
// so that memory and the sort stay small however busy it is.
const WindowSize = 2048

// MinSamples is how many answers a window needs before its p95 is
// trusted; with fewer the controller holds (or uses a pushed report).
const MinSamples = 10

// Window is one replica's view of the order page's answers, per queue: the
// status and latency of each upstream answer through the reverse-proxy
// gate, or of each probe. Safe for concurrent use.
type Window struct {
	mu      sync.Mutex
	byQueue map[string]*ring
}

type sample struct {
	at    time.Time
	took  time.Duration
	bad   bool
	voice string // the admission it came with ("": none, a probe)
}

type ring struct {
	s    [WindowSize]sample
	next int
	n    int
}

// NewWindow returns an empty window.
func NewWindow() *Window { return &Window{byQueue: map[string]*ring{}} }

// Observe records one answer of queue's order page: the admission whose
// request it answered (its voice; "" for a probe), its status (0: none
// came, the proxy gave up), how long it took to start, and when its
// request was sent. A 5xx or no answer counts as an error; a 4xx is the
// client's, not the order page's.
func (w *Window) Observe(queue, voice string, status int, took time.Duration, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.byQueue[queue]
	if r == nil {
		r = &ring{}
		w.byQueue[queue] = r
	}
	r.s[r.next] = sample{at: at, took: took, bad: status == 0 || status >= 500, voice: voice}
	r.next = (r.next + 1) % WindowSize
	r.n = min(r.n+1, WindowSize)
}

// Signal is the p95 and error rate of queue's answers since since, each
// admission one voice (see byVoice); ok is false with fewer than
// MinSamples of them, or fewer than MinVoices admissions.
func (w *Window) Signal(queue string, since time.Time) (Signal, bool) {
	s := w.since(queue, since)
	if len(s) < MinSamples {
		return Signal{Samples: len(s)}, false
	}
	return byVoice(s)
}

// pooled is the p95 and error rate of queue's answers since since, every
// answer alike: for the probes, which one replica makes.
func (w *Window) pooled(queue string, since time.Time, least int) (Signal, bool) {
	s := w.since(queue, since)
	var took []time.Duration
	bad := 0
	for _, x := range s {
		took = append(took, x.took)
		if x.bad {
			bad++
		}
	}
	if len(took) < least {
		return Signal{Samples: len(took)}, false
	}
	slices.Sort(took)
	// The nearest-rank p95: the smallest value at least 95 % of the
	// answers are no slower than.
	rank := (len(took)*95 + 99) / 100
	return Signal{P95: took[rank-1], ErrorRate: float64(bad) / float64(len(took)), Samples: len(took)}, true
}

// since returns queue's answers to requests sent since since.
func (w *Window) since(queue string, since time.Time) []sample {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.byQueue[queue]
	if r == nil {
		return nil
	}
	var out []sample
	for i := range r.n {
		if s := r.s[i]; !s.at.Before(since) {
			out = append(out, s)
		}
	}
	return out
}
