// Package linedoc serves a queue's line as a public document
// (GET /api/v1/queues/{queue}/line): the replica's snapshot of
// the line (queue.Line) as JSON, the same bytes for everyone, encoded once
// per snapshot read and never with a Redis command, so that nginx or a
// CDN can cache it for a second and the crowd far from the head costs the
// origin one request a second per cache, whatever its size.
//
// It reveals no person: no member ids, no credentials; only the line's
// length, its rate, and the arrival numbers at a few dozen ranks.
package linedoc

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// MaxBytes bounds a document, whatever the line's length: samples are
// thinned until it fits.
const MaxBytes = 4096

// ErrNoLine: the replica holds no snapshot fresh enough (Redis away, just
// started). The answer is then not to be cached.
var ErrNoLine = errors.New("linedoc: no fresh snapshot of the line")

// Document is a queue's encoded document.
type Document struct {
	Body []byte
	// ETag is the body's strong validator (quoted).
	ETag string
}

// Source is where the documents come from (*queue.Store).
type Source interface {
	Line(queue string, now time.Time) (queue.Line, bool)
}

// Documents encodes each queue's document once per snapshot read.
type Documents struct {
	src  Source
	mu   sync.Mutex // guards last's map, not its entries
	last map[string]*atomic.Pointer[entry]
}

type entry struct {
	line queue.Line
	doc  Document
}

// New returns the documents of src's queues.
func New(src Source) *Documents {
	return &Documents{src: src, last: map[string]*atomic.Pointer[entry]{}}
}

// Get is queue's document now: the one already encoded while the
// snapshot is the same.
func (d *Documents) Get(q string, now time.Time) (Document, error) {
	line, ok := d.src.Line(q, now)
	if !ok {
		return Document{}, ErrNoLine
	}
	p := d.slot(q)
	if e := p.Load(); e != nil && e.line.Same(line) {
		return e.doc, nil
	}
	doc := Encode(q, line)
	p.Store(&entry{line: line, doc: doc})
	return doc, nil
}

func (d *Documents) slot(q string) *atomic.Pointer[entry] {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.last[q]
	if !ok {
		p = new(atomic.Pointer[entry])
		d.last[q] = p
	}
	return p
}

// Body is the document's JSON. Times are ms; at_ms is the replica's clock
// when it read the line, and until_next_tick_ms counts from it.
type Body struct {
	Queue            string `json:"queue"`
	AtMS             int64  `json:"at_ms"`
	Waiting          int64  `json:"waiting"`
	NearHead         int64  `json:"near_head"`
	TickReach        int64  `json:"tick_reach"`
	UntilNextTickMS  int64  `json:"until_next_tick_ms"`
	RefillSize       int    `json:"refill_size"`
	RefillIntervalMS int64  `json:"refill_interval_ms"`
	Paused           bool   `json:"paused"`
	OpensAt          string `json:"opens_at,omitempty"`
	PrequeueFrom     string `json:"prequeue_from,omitempty"`
	// DrawCommitment is the SHA-256 (hex) of the opening's draw's sealed
	// seed, revealed at the opening (GET .../draw).
	DrawCommitment string `json:"draw_commitment,omitempty"`
	AbandonAfterMS int64  `json:"abandon_after_ms"`
	HeldMax        int64  `json:"held_max"`
	InDraw         bool   `json:"in_draw"`
	Complete       bool   `json:"complete"`
	// Closed: the operator closed the sale; ClosedMessage is its message
	// by language (the page picks its own) and ReopensAt when sales
	// reopen, if said. A page far back learns it here, with no status call.
	Closed        bool              `json:"closed"`
	ClosedMessage map[string]string `json:"closed_message,omitempty"`
	ReopensAt     string            `json:"reopens_at,omitempty"`
	// Samples are [rank, arrival number] pairs, ranks 0-based, ascending.
	Samples [][2]int64 `json:"samples"`
}

// Encode is l's document for queue q, at most MaxBytes.
func Encode(q string, l queue.Line) Document {
	b := Body{Queue: q, AtMS: l.Read.UnixMilli(), Waiting: l.Waiting, NearHead: l.NearHead, TickReach: l.TickReach,
		UntilNextTickMS: l.UntilNextTick.Milliseconds(), RefillSize: l.RefillSize, RefillIntervalMS: l.RefillInterval.Milliseconds(),
		Paused: l.Paused, OpensAt: rfc3339(l.OpensAt), PrequeueFrom: rfc3339(l.PrequeueFrom), DrawCommitment: l.DrawCommitment,
		AbandonAfterMS: l.AbandonAfter.Milliseconds(), HeldMax: l.HeldMax, InDraw: l.InDraw, Complete: l.Complete,
		Samples: make([][2]int64, len(l.Ranks))}
	if !l.ClosedAt.IsZero() {
		// The message is bounded (queue.MaxClosedMessageBytes), so the
		// document still fits once the samples are thinned.
		b.Closed, b.ClosedMessage, b.ReopensAt = true, l.Closed.Message, rfc3339(l.Closed.ReopensAt)
	}
	for i := range l.Ranks {
		b.Samples[i] = [2]int64{l.Ranks[i], l.Arrivals[i]}
	}
	for {
		body, _ := json.Marshal(b) // plain values: cannot fail
		if len(body) <= MaxBytes || len(b.Samples) <= 2 {
			sum := sha256.Sum256(body)
			return Document{Body: body, ETag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		}
		b.Samples = thin(b.Samples)
	}
}

// thin drops every other sample but the first and the last: between the
// samples left, a page interpolates as before, less closely.
func thin(s [][2]int64) [][2]int64 {
	out := s[:0:0]
	for i, v := range s {
		if i%2 == 0 || i == len(s)-1 {
			out = append(out, v)
		}
	}
	return out
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
