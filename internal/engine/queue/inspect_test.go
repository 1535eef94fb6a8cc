package queue

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Overview gives the snapshot and the history together, with the
// admissions of the last minute: the interval in progress and the one
// the tick just closed.
func TestOverview(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour})
	for _, u := range []string{"a", "b", "c", "d", "e"} {
		enter(t, s, q, u) // a and b directly, on the bucket's tokens
	}
	tick(t, s, rdb, q) // closes the interval of a and b, moves c and d
	o, err := NewInspector(s).Overview(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if o.Queue != q || o.Waiting != 1 || o.Entered != 4 || o.AdmittedThisInterval != 2 {
		t.Fatalf("overview's snapshot: %+v", o.Info)
	}
	if len(o.History) != 1 || o.History[0].Admitted != 2 {
		t.Fatalf("overview's history: %+v", o.History)
	}
	if o.AdmittedLastMinute != 4 {
		t.Fatalf("admitted in the last minute: %d, want 4", o.AdmittedLastMinute)
	}
	if _, err := NewInspector(s).Overview(ctx, "nope"); !errors.Is(err, ErrUnknownQueue) {
		t.Fatalf("overview of an unknown queue: %v", err)
	}
}

// An interval counts when it ended within the window: it ends where the
// next begins, the last one at the last tick.
func TestAdmittedSince(t *testing.T) {
	now := time.UnixMilli(1_000_000_000)
	info := Info{LastTickAt: now, AdmittedThisInterval: 3}
	points := []HistoryPoint{
		{At: now.Add(-3 * time.Minute), Admitted: 1},  // ended at -2m: out
		{At: now.Add(-2 * time.Minute), Admitted: 2},  // ended at -30s: in
		{At: now.Add(-30 * time.Second), Admitted: 4}, // ended at the last tick: in
	}
	if got := admittedSince(info, points, now.Add(-time.Minute)); got != 3+2+4 {
		t.Errorf("admitted since a minute ago: %d, want 9", got)
	}
	if got := admittedSince(info, nil, now.Add(-time.Minute)); got != 3 {
		t.Errorf("without history: %d, want the interval in progress (3)", got)
	}
}
