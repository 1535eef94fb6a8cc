package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// outbox reads queue q's events stream as "type:sub,sub" per entry.
func outbox(t *testing.T, rdb *redis.Client, q string) []string {
	t.Helper()
	return stream(t, rdb, rediskeys.Events(q))
}

// stream reads an outbox as "type:sub,sub" per entry.
func stream(t *testing.T, rdb *redis.Client, key string) []string {
	t.Helper()
	msgs, err := rdb.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		subs := strings.ReplaceAll(m.Values["subs"].(string), "\n", ",")
		out = append(out, fmt.Sprint(m.Values["type"], ":", subs))
	}
	return out
}

// TestEventsWrittenByTheScripts: with the webhooks flag, every script that
// causes an event writes it in the outbox, in the same call; without it,
// nothing is written at all.
func TestEventsWrittenByTheScripts(t *testing.T) {
	ctx := context.Background()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("webhooks_", on), func(t *testing.T) {
			s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Minute, SessionTTL: time.Minute})
			if on {
				rdb.HSet(ctx, rediskeys.Config(q), "webhooks", "1")
			}
			enter(t, s, q, "a")  // direct: admitted
			enter(t, s, q, "b")  // direct: admitted
			enter(t, s, q, "c")  // waits
			enter(t, s, q, "d")  // waits
			status(t, s, q, "c") // nothing
			if ok, err := s.Done(ctx, q, "a", status(t, s, q, "a").AdmittedAt); err != nil || !ok {
				t.Fatal("done", ok, err)
			}
			if err := s.Leave(ctx, q, Caller{User: "b"}); err != nil {
				t.Fatal(err)
			}
			if _, err := NewInspector(s).Remove(ctx, q, "d"); err != nil {
				t.Fatal(err)
			}
			tick(t, s, rdb, q) // admits c
			// c's session ends: the next tick purges it as expired.
			rdb.ZAdd(ctx, keysFor(q).entered, redis.Z{Score: 1, Member: "c"})
			tick(t, s, rdb, q)
			refill := 3
			if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: &refill, By: json.RawMessage(`{"kind":"oidc","name":"kim@example.com"}`)}); err != nil {
				t.Fatal(err)
			}
			got := outbox(t, rdb, q)
			if !on {
				if n := rdb.Exists(ctx, rediskeys.Events(q), rediskeys.BulkEvents(q)).Val(); n != 0 || len(got) != 0 {
					t.Fatalf("no webhooks, yet the outbox holds %v", got)
				}
				return
			}
			want := []string{"admitted:a", "admitted:b", "done:a", "removed:d", "admitted:c", "expired:c", "settings_changed:"}
			if !slices.Equal(got, want) {
				t.Fatalf("outbox\n got %v\nwant %v", got, want)
			}
			// A user's own leaving goes to the bulk outbox.
			if got, want := stream(t, rdb, rediskeys.BulkEvents(q)), []string{"left:b"}; !slices.Equal(got, want) {
				t.Fatalf("bulk outbox\n got %v\nwant %v", got, want)
			}
			last, _ := rdb.XRevRangeN(ctx, rediskeys.Events(q), "+", "-", 1).Result()
			var settings map[string]string
			if err := json.Unmarshal([]byte(last[0].Values["settings"].(string)), &settings); err != nil || settings["refill_size"] != "3" {
				t.Fatalf("settings_changed carries %v (%v)", last[0].Values, err)
			}
			if a, _ := last[0].Values["actor"].(string); a != `{"kind":"oidc","name":"kim@example.com"}` {
				t.Fatalf("settings_changed names %q", a)
			}
		})
	}
}

// TestEventsChunked: a tick admitting more users than one entry holds
// writes several entries, every user once, in line order.
func TestEventsChunked(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 250, RefillInterval: time.Minute, SessionTTL: time.Minute})
	rdb.HSet(ctx, rediskeys.Config(q), "webhooks", "1")
	rdb.Set(ctx, keysFor(q).tokens, 0, 0) // nobody enters directly
	var want []string
	for i := range 250 {
		u := fmt.Sprintf("u%03d", i)
		enter(t, s, q, u)
		want = append(want, u)
	}
	tick(t, s, rdb, q)
	var got []string
	for _, e := range outbox(t, rdb, q) {
		kind, subs, _ := strings.Cut(e, ":")
		if kind != "admitted" {
			t.Fatalf("unexpected %s", e)
		}
		got = append(got, strings.Split(subs, ",")...)
	}
	if n := rdb.XLen(ctx, rediskeys.Events(q)).Val(); n != 3 {
		t.Errorf("%d entries for 250 users, want 3 (100 a piece)", n)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("admitted events: %d users, want %d in order", len(got), len(want))
	}
}

// TestEventsAbandoned: a place the tick drops at the head of the line,
// not heard from for abandon_after, is told as abandoned.
func TestEventsAbandoned(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Minute, SessionTTL: time.Minute, AbandonAfter: time.Minute})
	rdb.HSet(ctx, rediskeys.Config(q), "webhooks", "1")
	rdb.Set(ctx, keysFor(q).tokens, 0, 0) // nobody enters directly
	enter(t, s, q, "gone")
	enter(t, s, q, "here")
	rdb.ZAdd(ctx, keysFor(q).heard, redis.Z{Score: 1, Member: "gone"}) // last heard long ago
	if res := tick(t, s, rdb, q); res.Abandoned != 1 || res.Moved != 1 {
		t.Fatalf("tick %+v", res)
	}
	if got, want := outbox(t, rdb, q), []string{"abandoned:gone", "admitted:here"}; !slices.Equal(got, want) {
		t.Fatalf("outbox %v, want %v", got, want)
	}
}

// TestEventsBounded: an outbox at its cap takes no more
// events; what it drops is counted in the config, by user, and what it
// holds is never trimmed unread. The bulk outbox's cap is the workers'
// webhooks_bulk_max; the events outbox's is 100,000 entries.
func TestEventsBounded(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Minute, SessionTTL: time.Minute})
	rdb.HSet(ctx, rediskeys.Config(q), "webhooks", "1", "webhooks_bulk_max", "3")
	enter(t, s, q, "first") // admitted: the events outbox
	for i := range 5 {
		u := fmt.Sprintf("u%d", i)
		enter(t, s, q, u)
		if err := s.Leave(ctx, q, Caller{User: u}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := stream(t, rdb, rediskeys.BulkEvents(q)), []string{"left:u0", "left:u1", "left:u2"}; !slices.Equal(got, want) {
		t.Fatalf("bulk outbox %v, want %v (the first 3)", got, want)
	}
	if got := rdb.HGet(ctx, rediskeys.Config(q), "webhooks_dropped_bulk_full").Val(); got != "2" {
		t.Fatalf("bulk drops counted %q, want 2", got)
	}

	// Fill the events outbox to its cap; a tick then admits 2 users
	// (refill 2): both dropped, counted, the oldest entry still there.
	const maxlen = 100000
	first := oldestEntry(t, rdb, rediskeys.Events(q))
	for n := rdb.XLen(ctx, rediskeys.Events(q)).Val(); n < maxlen; {
		pipe := rdb.Pipeline()
		for range min(maxlen-n, 5000) {
			pipe.XAdd(ctx, &redis.XAddArgs{Stream: rediskeys.Events(q), Values: []string{"type", "filler", "at", "0", "subs", ""}})
			n++
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	refill := 2
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: &refill}); err != nil { // itself an event: dropped
		t.Fatal(err)
	}
	rdb.Set(ctx, keysFor(q).tokens, 0, 0) // nobody enters directly
	enter(t, s, q, "a")
	enter(t, s, q, "b")
	if res := tick(t, s, rdb, q); res.Moved != 2 {
		t.Fatalf("tick %+v", res)
	}
	if n := rdb.XLen(ctx, rediskeys.Events(q)).Val(); n != maxlen {
		t.Fatalf("events outbox holds %d entries, want its cap %d", n, maxlen)
	}
	if got := oldestEntry(t, rdb, rediskeys.Events(q)); got != first {
		t.Fatalf("the oldest entry %s trimmed (now %s)", first, got)
	}
	if got := rdb.HGet(ctx, rediskeys.Config(q), "webhooks_dropped_outbox_full").Val(); got != "3" {
		t.Fatalf("drops counted %q, want 3 (settings_changed, admitted a and b)", got)
	}
}

// oldestEntry is the ID of stream's first entry, read alone: the whole
// outbox (100,000 entries) took longer than the client's read timeout on
// a loaded machine, and an empty answer looked like an empty stream.
func oldestEntry(t *testing.T, rdb *redis.Client, stream string) string {
	t.Helper()
	v, err := rdb.XRangeN(context.Background(), stream, "-", "+", 1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) == 0 {
		t.Fatalf("%s is empty", stream)
	}
	return v[0].ID
}
