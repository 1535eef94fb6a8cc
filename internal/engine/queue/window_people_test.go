package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// tickReplicas has every store call the tick as fast as it can until
// done holds for the window changes reported so far (or a generous
// deadline, a failure), and returns those changes.
func tickReplicas(t *testing.T, q string, stores []*Store, done func([]WindowChange) bool) []WindowChange {
	t.Helper()
	var mu sync.Mutex
	var got []WindowChange
	var wg sync.WaitGroup
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				res, err := s.Tick(context.Background(), q)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if res.Window != nil {
					got = append(got, *res.Window)
				}
				ok := done(got)
				mu.Unlock()
				if ok {
					return
				}
			}
		}()
	}
	wg.Wait()
	if !done(got) {
		t.Fatalf("the replicas' ticks reported %+v, never what was awaited", got)
	}
	return got
}

// count is how many of cs started (started) or ended a window.
func count(cs []WindowChange, started bool) int {
	n := 0
	for _, c := range cs {
		if started && c.Started || !started && c.Ended {
			n++
		}
	}
	return n
}

// changesText is a list of setting changes as "field:old>new".
func changesText(cs []SettingChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s:%s>%s", c.Field, c.Old, c.New))
	}
	return out
}

// scheduleEvents are the settings_changed events the schedule sent.
func scheduleEvents(t *testing.T, rdb *redis.Client, q string) []map[string]any {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), rediskeys.Events(q), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, m := range msgs {
		if m.Values["type"] != "settings_changed" || m.Values["actor"] != `{"kind":"schedule"}` {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(m.Values["settings"].(string)), &v); err != nil {
			t.Fatalf("settings_changed %v: %v", m.Values, err)
		}
		out = append(out, v)
	}
	return out
}

// TestScheduleWindowKeepsPeoplesChanges: a window (refill 50, not
// paused, cap 1000) is in force on two replicas; an admin pauses the
// queue and caps it at 3 during it. Its end restores only what nobody
// changed (the refill), leaves the admin's pause and cap, and every
// change the start and the end made is reported old -> new and sent in
// settings_changed. A later window that would unpause does not lift the
// admin's pause.
func TestScheduleWindowKeepsPeoplesChanges(t *testing.T) {
	ctx := context.Background()
	set := Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour}
	a, q, rdb := newStore(t, set)
	b, err := NewStore(rdb, []string{q}, set, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewInspector(a).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, rediskeys.Config(q), "webhooks", "1")
	stores := []*Store{a, b}

	start := time.Now().Add(-time.Second).Truncate(time.Millisecond)
	refill, active, paused := 50, 1000, false
	w := Window{Start: start, End: start.Add(time.Hour), RefillSize: &refill, MaxActive: &active, Paused: &paused}
	if _, _, err := NewInspector(a).SetSchedule(ctx, q, Schedule{Windows: []Window{w}}); err != nil {
		t.Fatal(err)
	}
	got := tickReplicas(t, q, stores, func(cs []WindowChange) bool { return count(cs, true) > 0 })
	if count(got, true) != 1 {
		t.Fatalf("started %d times: %+v", count(got, true), got)
	}
	if c, want := changesText(got[0].StartChanges), []string{"refill_size:10>50", "max_active:0>1000"}; !slices.Equal(c, want) {
		t.Fatalf("the start changed %v, want %v (paused was already false)", c, want)
	}

	// The admin's emergency change, mid-window.
	yes, three := true, 3
	if err := NewInspector(b).UpdateSettings(ctx, q, Update{Paused: &yes, MaxActive: &three, By: json.RawMessage(`{"kind":"oidc","name":"kim@example.com"}`)}); err != nil {
		t.Fatal(err)
	}

	// The window ends (cut short: the tick sees it over).
	w.End = time.Now().Truncate(time.Millisecond)
	if _, _, err := NewInspector(a).SetSchedule(ctx, q, Schedule{Windows: []Window{w}}); err != nil {
		t.Fatal(err)
	}
	got = tickReplicas(t, q, stores, func(cs []WindowChange) bool { return count(cs, false) > 0 })
	if count(got, false) != 1 || count(got, true) != 0 {
		t.Fatalf("ended %d times, started %d: %+v", count(got, false), count(got, true), got)
	}
	if c, want := changesText(got[0].EndChanges), []string{"refill_size:50>10"}; !slices.Equal(c, want) {
		t.Fatalf("the end changed %v, want %v", c, want)
	}
	after, err := NewInspector(a).Values(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if after["paused"] != true || after["max_active"] != 3 || after["refill_size"] != 10 {
		t.Fatalf("after the window: paused %v, max_active %v, refill_size %v; want the admin's pause and cap, the refill from before",
			after["paused"], after["max_active"], after["refill_size"])
	}

	// A later window that would unpause leaves the admin's pause.
	later := Window{Start: time.Now().Add(-time.Second).Truncate(time.Millisecond), End: time.Now().Add(time.Hour), Paused: &paused, RefillSize: &refill}
	if _, _, err := NewInspector(a).SetSchedule(ctx, q, Schedule{Windows: []Window{later}}); err != nil {
		t.Fatal(err)
	}
	got = tickReplicas(t, q, stores, func(cs []WindowChange) bool { return count(cs, true) > 0 })
	if c, want := changesText(got[0].StartChanges), []string{"refill_size:10>50"}; !slices.Equal(c, want) {
		t.Fatalf("the later window's start changed %v, want %v", c, want)
	}
	if v, _ := NewInspector(a).Values(ctx, q); v["paused"] != true {
		t.Fatal("a window lifted the pause an admin set during a window")
	}

	// What the site was told, each under the schedule.
	events := scheduleEvents(t, rdb, q)
	want := []string{`{"max_active":"1000","refill_size":"50"}`, `{"refill_size":"10"}`, `{"refill_size":"50"}`}
	var told []string
	for _, e := range events {
		b, _ := json.Marshal(e)
		told = append(told, string(b))
	}
	if !slices.Equal(told, want) {
		t.Fatalf("settings_changed from the schedule:\n got %v\nwant %v", told, want)
	}
}

// TestScheduleWindowEndRestoresUntouched: a window's end restores the
// fields nobody touched, a pause the window set included; a person who
// sets during the window the very value it wrote keeps it.
func TestScheduleWindowEndRestoresUntouched(t *testing.T) {
	ctx := context.Background()
	for _, touch := range []bool{false, true} {
		t.Run(fmt.Sprint("touched_", touch), func(t *testing.T) {
			s, q, _ := newStore(t, Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour})
			yes, refill := true, 30
			w := Window{Start: time.Now().Add(-time.Second).Truncate(time.Millisecond), End: time.Now().Add(time.Hour), Paused: &yes, RefillSize: &refill}
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, Schedule{Windows: []Window{w}}); err != nil {
				t.Fatal(err)
			}
			tickReplicas(t, q, []*Store{s}, func(cs []WindowChange) bool { return count(cs, true) > 0 })
			if touch {
				if err := NewInspector(s).UpdateSettings(ctx, q, Update{Paused: &yes}); err != nil {
					t.Fatal(err)
				}
			}
			if _, _, err := NewInspector(s).SetSchedule(ctx, q, Schedule{}); err != nil {
				t.Fatal(err)
			}
			got := tickReplicas(t, q, []*Store{s}, func(cs []WindowChange) bool { return count(cs, false) > 0 })
			v, err := NewInspector(s).Values(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"refill_size:30>10", "paused:true>false"}
			if touch {
				want = want[:1]
			}
			if c := changesText(got[0].EndChanges); !slices.Equal(c, want) || v["paused"] != touch || v["refill_size"] != 10 {
				t.Fatalf("after the end: changes %v (want %v), paused %v (want %v), refill %v", c, want, v["paused"], touch, v["refill_size"])
			}
		})
	}
}
