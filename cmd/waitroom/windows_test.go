package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// TestWindowEntries: a window's end and start are audited under the
// schedule, each with the window and every setting it changed, old and
// new; the end first.
func TestWindowEntries(t *testing.T) {
	at := time.Date(2026, 12, 24, 9, 0, 0, 0, time.UTC)
	w := &queue.WindowChange{Started: true, Ended: true, At: at,
		EndChanges:   []queue.SettingChange{{Field: "refill_size", Old: json.RawMessage(`50`), New: json.RawMessage(`10`)}},
		StartChanges: []queue.SettingChange{{Field: "paused", Old: json.RawMessage(`false`), New: json.RawMessage(`true`)}, {Field: "max_active", Old: json.RawMessage(`0`), New: json.RawMessage(`1000`)}}}
	es := windowEntries("q", w)
	if len(es) != 2 || es[0].Action != "window_ended" || es[1].Action != "window_started" {
		t.Fatalf("entries %+v", es)
	}
	for i, want := range []string{
		`[{"field":"window","old":null,"new":"2026-12-24T09:00:00Z"},{"field":"refill_size","old":50,"new":10}]`,
		`[{"field":"window","old":null,"new":"2026-12-24T09:00:00Z"},{"field":"paused","old":false,"new":true},{"field":"max_active","old":0,"new":1000}]`,
	} {
		if es[i].Actor == nil || es[i].Actor.Kind != actor.KindSchedule {
			t.Fatalf("%s: actor %+v, want the schedule", es[i].Action, es[i].Actor)
		}
		if b, _ := json.Marshal(es[i].Changes); string(b) != want {
			t.Fatalf("%s: changes\n got %s\nwant %s", es[i].Action, b, want)
		}
	}
}
