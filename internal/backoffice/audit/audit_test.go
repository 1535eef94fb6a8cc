package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

func newLog(t *testing.T) (*audit.Log, string) {
	t.Helper()
	l, err := audit.New(redistest.Client(t))
	if err != nil {
		t.Fatal(err)
	}
	return l, fmt.Sprintf("a%d", time.Now().UnixNano())
}

// Entries come back newest first, as recorded, stamped with the Redis clock.
func TestRecordAndList(t *testing.T) {
	t.Parallel()
	l, q := newLog(t)
	ctx := context.Background()
	before := time.Now()
	first, err := l.Record(ctx, audit.Entry{ClientIP: "192.0.2.7", Queue: q, Action: "settings", RequestID: "r1",
		Changes: []audit.Change{
			{Field: "refill_size", Old: audit.Value(5), New: audit.Value(7)},
			{Field: "opens_at", Old: nil, New: audit.Value("2030-01-02T03:04:05Z")},
			{Field: "paused", Old: json.RawMessage{}, New: audit.Value(true)},
		}})
	if err != nil {
		t.Fatal(err)
	}
	// The Redis clock and this one may differ a little (same machine here).
	if at := time.UnixMilli(first.AtMS); at.Before(before.Add(-5*time.Second)) || at.After(time.Now().Add(5*time.Second)) {
		t.Fatalf("entry time %s, want about now", at)
	}
	if _, err := l.Record(ctx, audit.Entry{ClientIP: "2001:db8::1", Queue: q, Action: "remove_user", Target: "u1"}); err != nil {
		t.Fatal(err)
	}
	got, err := l.List(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Action != "remove_user" || got[1].Action != "settings" {
		t.Fatalf("entries %+v, want the removal then the settings", got)
	}
	if got[0].Target != "u1" || got[0].ClientIP != "2001:db8::1" || got[0].Changes == nil || len(got[0].Changes) != 0 {
		t.Fatalf("removal entry %+v", got[0])
	}
	want := `[{"field":"refill_size","old":5,"new":7},{"field":"opens_at","old":null,"new":"2030-01-02T03:04:05Z"},{"field":"paused","old":null,"new":true}]`
	if b, _ := json.Marshal(got[1].Changes); string(b) != want {
		t.Fatalf("changes %s, want %s", b, want)
	}
	if got[1].AtMS != first.AtMS || got[1].ClientIP != "192.0.2.7" || got[1].Queue != q || got[1].RequestID != "r1" {
		t.Fatalf("settings entry %+v, recorded %+v", got[1], first)
	}
	if got[0].AtMS < got[1].AtMS {
		t.Fatalf("newer entry %d before older %d", got[0].AtMS, got[1].AtMS)
	}
	if one, _ := l.List(ctx, q, 1); len(one) != 1 || one[0].Action != "remove_user" {
		t.Fatalf("List(1) = %+v", one)
	}
}

// The log keeps the newest MaxEntries entries.
func TestBounded(t *testing.T) {
	t.Parallel()
	l, q := newLog(t)
	ctx := context.Background()
	for i := range audit.MaxEntries + 25 {
		if _, err := l.Record(ctx, audit.Entry{Queue: q, Action: "refill_size", Changes: []audit.Change{{Field: "refill_size", Old: audit.Value(i), New: audit.Value(i + 1)}}}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.List(ctx, q, audit.MaxEntries+100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != audit.MaxEntries {
		t.Fatalf("%d entries kept, want %d", len(got), audit.MaxEntries)
	}
	if n := redistest.Client(t).LLen(ctx, rediskeys.Audit(q)).Val(); n != audit.MaxEntries {
		t.Fatalf("LLEN %d, want %d", n, audit.MaxEntries)
	}
	newest, oldest := string(got[0].Changes[0].New), string(got[len(got)-1].Changes[0].New)
	if newest != fmt.Sprint(audit.MaxEntries+25) || oldest != "26" {
		t.Fatalf("kept entries %s..%s, want the newest %d", oldest, newest, audit.MaxEntries)
	}
}

func TestRecordNeedsQueueAndAction(t *testing.T) {
	t.Parallel()
	l, q := newLog(t)
	for _, e := range []audit.Entry{{Queue: q}, {Action: "settings"}} {
		if _, err := l.Record(context.Background(), e); err == nil {
			t.Errorf("Record(%+v) succeeded", e)
		}
	}
	if _, err := audit.New(nil); err == nil {
		t.Error("New accepted no client")
	}
}
