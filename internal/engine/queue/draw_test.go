package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sealedSeed reads the sealed seed straight from Redis, as no answer may.
func sealedSeed(t *testing.T, rdb *redis.Client, q string) string {
	t.Helper()
	seed, err := rdb.Get(context.Background(), keysFor(q).drawSeed).Result()
	if err != nil {
		t.Fatalf("the sealed seed: %v", err)
	}
	return seed
}

func drawState(t *testing.T, s *Store, q string) DrawState {
	t.Helper()
	d, err := s.Draw(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func commitmentOf(t *testing.T, seedHex string) string {
	t.Helper()
	b, err := hex.DecodeString(seedHex)
	if err != nil || len(b) != 32 {
		t.Fatalf("seed %q: 32 bytes of hex expected", seedHex)
	}
	return DrawCommitment(b)
}

// Setting an opening seals a 256-bit seed whose SHA-256 alone is public;
// until the pre-queue opens, moving the opening seals a fresh one, and
// clearing it discards it; once the pre-queue is open, the opening can be
// moved or cleared and keeps its seed, and a change that would need a new
// one (closing the pre-queue again) is refused, changing nothing.
func TestDrawSeal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour})
	in := NewInspector(s)
	now, _ := rdb.Time(ctx).Result()

	if d := drawState(t, s, q); d.Sealed != "" || !d.Last.For.IsZero() {
		t.Fatalf("a queue never scheduled: %+v", d)
	}
	schedule(t, s, q, now.Add(time.Hour), now.Add(2*time.Hour))
	first := drawState(t, s, q).Sealed
	if seed := sealedSeed(t, rdb, q); len(first) != 64 || commitmentOf(t, seed) != first {
		t.Fatalf("sealed %q, the seed's SHA-256 is %q", first, commitmentOf(t, seed))
	}
	// Not bound yet: nobody holds a key. A new time, a new seed.
	schedule(t, s, q, now.Add(time.Hour), now.Add(3*time.Hour))
	second := drawState(t, s, q).Sealed
	if second == first || commitmentOf(t, sealedSeed(t, rdb, q)) != second {
		t.Fatalf("resealed before the pre-queue opened: %q then %q", first, second)
	}
	var none time.Time
	if err := in.UpdateSettings(ctx, q, Update{OpensAt: &none, PrequeueFrom: &none}); err != nil {
		t.Fatal(err)
	}
	if d := drawState(t, s, q); d.Sealed != "" || rdb.Exists(ctx, keysFor(q).drawSeed).Val() != 0 {
		t.Fatalf("a cleared opening before its pre-queue keeps a seal: %+v", d)
	}

	// The pre-queue opens: the seed is bound.
	schedule(t, s, q, now.Add(-time.Minute), now.Add(time.Hour))
	bound := drawState(t, s, q).Sealed
	seed := sealedSeed(t, rdb, q)
	enter(t, s, q, "p1")
	later := now.Add(2 * time.Hour)
	if err := in.UpdateSettings(ctx, q, Update{OpensAt: &later}); err != nil {
		t.Fatalf("moving a bound draw's opening: %v", err)
	}
	earlier := now.Add(-2 * time.Minute) // the pre-queue stays open
	if err := in.UpdateSettings(ctx, q, Update{OpensAt: &later, PrequeueFrom: &earlier}); err != nil {
		t.Fatalf("the back office's form, the pre-queue still open: %v", err)
	}
	closeAgain := now.Add(time.Minute)
	err := in.UpdateSettings(ctx, q, Update{PrequeueFrom: &closeAgain, OpensAt: &later})
	if !errors.Is(err, ErrDrawSealed) {
		t.Fatalf("closing a bound draw's pre-queue again: %v, want ErrDrawSealed", err)
	}
	if v, _ := in.Values(ctx, q); !v["prequeue_from"].(time.Time).Equal(earlier.Truncate(time.Millisecond)) {
		t.Fatalf("a refused change changed prequeue_from: %v", v["prequeue_from"])
	}
	if d := drawState(t, s, q); d.Sealed != bound || sealedSeed(t, rdb, q) != seed {
		t.Fatalf("the seal changed: %+v", d)
	}
	// Cleared, the draw is placed and revealed at the next tick.
	if err := in.UpdateSettings(ctx, q, Update{OpensAt: &none, PrequeueFrom: &none}); err != nil {
		t.Fatal(err)
	}
	if d := drawState(t, s, q); d.Sealed != bound {
		t.Fatalf("clearing a bound draw's opening discarded its seal: %+v", d)
	}
	tick(t, s, rdb, q)
	d := drawState(t, s, q)
	if d.Sealed != "" || d.Last.Seed != seed || d.Last.Commitment != bound || d.Last.Count != 1 || d.Last.Placing {
		t.Fatalf("revealed: %+v, want seed %s", d, seed)
	}
	if rdb.Exists(ctx, keysFor(q).drawSeed).Val() != 0 {
		t.Fatal("the seed key outlives the reveal")
	}
}

// listOf reads a line's whole list of the last draw.
func listOf(t *testing.T, s *Store, q, lane string) []DrawEntry {
	t.Helper()
	var all []DrawEntry
	for from := int64(1); ; from += 7 {
		page, err := s.DrawEntries(context.Background(), q, lane, from, 7)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page...)
		if len(page) < 7 {
			return all
		}
	}
}

// Each participant joins under HMAC-SHA256(seed, member id); at the
// opening the lines are placed lowest key first, each place's entry (its
// key, its member id's SHA-256) in the draw's list at its place, in the
// general lane and in a lane alike; a participant who left is not placed
// nor listed, one who entered twice is listed once; a drawn place's
// status says its place in the draw.
func TestDrawOrderIsRecomputable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "vip", Share: 0.5}})
	paused := true
	if err := NewInspector(s).UpdateSettings(ctx, q, Update{Paused: &paused}); err != nil {
		t.Fatal(err)
	}
	now, _ := rdb.Time(ctx).Result()
	schedule(t, s, q, now.Add(-time.Minute), now.Add(time.Hour))
	lines := map[string][]string{}
	for i := range 40 {
		u := fmt.Sprintf("g%02d", i)
		lane := ""
		if i%4 == 0 {
			lane, u = "vip", LaneMember("vip", u)
		}
		if tk := enter(t, s, q, u); tk.Status != Waiting || tk.Position != 0 {
			t.Fatalf("%s in the pre-queue: %+v", u, tk)
		}
		lines[lane] = append(lines[lane], u)
	}
	enter(t, s, q, "g01") // again: the same key
	if err := s.Leave(ctx, q, Caller{User: "g02"}); err != nil {
		t.Fatal(err)
	}
	lines[""] = slices.DeleteFunc(lines[""], func(u string) bool { return u == "g02" })
	seed := sealedSeed(t, rdb, q)
	schedule(t, s, q, now.Add(-time.Minute), now.Add(-time.Millisecond))
	tick(t, s, rdb, q)

	d := drawState(t, s, q)
	if d.Last.Seed != seed || d.Last.Count != 39 || len(d.Last.Lines) != 2 || d.Last.Lines[1].Lane != "vip" {
		t.Fatalf("the record: %+v", d)
	}
	seedBytes, _ := hex.DecodeString(seed)
	for i, line := range d.Last.Lines {
		want := drawOrder(t, seed, lines[line.Lane])
		list := listOf(t, s, q, line.Lane)
		if line.Count != int64(len(want)) || len(list) != len(want) {
			t.Fatalf("line %d: %d places, %d listed, want %d", i, line.Count, len(list), len(want))
		}
		for p, u := range want {
			id := sha256.Sum256([]byte(u))
			if !bytes.Equal(list[p].Key, DrawKey(seedBytes, u)) || !bytes.Equal(list[p].IDHash, id[:]) {
				t.Fatalf("line %q place %d: the list's entry is not %s's", line.Lane, p+1, u)
			}
			if st := status(t, s, q, u); st.Status != Waiting || st.DrawPlace != int64(p+1) || st.Seq != 0 {
				t.Fatalf("%s, drawn %d: %+v", u, p+1, st)
			}
		}
	}
	// Whoever arrives now is behind the draw, with no draw place.
	if tk := enter(t, s, q, "late"); tk.Status != Waiting || tk.DrawPlace != 0 || tk.Seq < 1 {
		t.Fatalf("late: %+v", tk)
	}
	if st := status(t, s, q, "late"); st.DrawPlace != 0 || st.Seq < 1 {
		t.Fatalf("late's status: %+v", st)
	}
}

// An enter into a sealed pre-queue with keys of another seal (a replica
// that read the seal before the operator moved the opening) changes
// nothing, and is made again with the seal read anew: its key is the
// new seed's.
func TestDrawStaleKeysAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	other, _, _ := newStoreFor(t, s, q)
	now, _ := rdb.Time(ctx).Result()
	schedule(t, s, q, now.Add(time.Second), now.Add(time.Hour))
	// The other replica reads the seal, then it changes (not bound yet).
	if err := other.readSeal(ctx, q, 0); err != nil {
		t.Fatal(err)
	}
	old := other.sealOf(q).cur.Load()
	schedule(t, s, q, now.Add(-time.Minute), now.Add(2*time.Hour))
	seed := sealedSeed(t, rdb, q)
	if hex.EncodeToString(old.seed) == seed {
		t.Fatal("the seal did not change")
	}
	tickets := runCall(t, other.queues[q].enters.run, []string{"u1"})
	if _, ok := tickets[0].refused.(drawStale); !ok {
		t.Fatalf("keys of an old seal: %+v", tickets[0])
	}
	if n := rdb.SCard(ctx, keysFor(q).draw).Val() + rdb.ZCard(ctx, keysFor(q).drawKeys).Val(); n != 0 {
		t.Fatalf("a refused enter joined the draw (%d)", n)
	}
	if tk, err := other.Enter(ctx, q, Entry{Caller: Caller{User: "u1"}}); err != nil || tk.Status != Waiting {
		t.Fatalf("enter again: %+v %v", tk, err)
	}
	members := rdb.ZRange(ctx, keysFor(q).drawKeys, 0, -1).Val()
	b, _ := hex.DecodeString(seed)
	if len(members) != 1 || !strings.HasPrefix(members[0], string(DrawKey(b, "u1"))) {
		t.Fatalf("u1's key is not the new seed's: %q", members)
	}
}

// A draw of many participants is placed a bounded batch a call, as
// before (drawBatch), nobody admitted until it is whole, and its list is
// read in pages. (TestDrawOfAMillion measures 1,000,000.)
func TestDrawPlacedInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 2*drawBatch + 123
	s, q, rdb := newStore(t, Settings{RefillSize: 5, RefillInterval: time.Hour, SessionTTL: time.Hour})
	now, _ := rdb.Time(ctx).Result()
	schedule(t, s, q, now.Add(-time.Minute), now.Add(time.Hour))
	users := make([]string, n)
	for i := range users {
		users[i] = fmt.Sprintf("m%06d", i)
	}
	for i := 0; i < n; i += maxBatch {
		runEnterCall(t, s, q, users[i:min(i+maxBatch, n)]...)
	}
	seed := sealedSeed(t, rdb, q)
	schedule(t, s, q, now.Add(-time.Minute), now.Add(-time.Millisecond))
	calls := 0
	for {
		res, err := s.Tick(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		calls++
		if res.Applied {
			break
		}
		if placed := rdb.ZCard(ctx, keysFor(q).waiting).Val(); placed > int64(calls*drawBatch) {
			t.Fatalf("call %d: %d placed, more than %d a call", calls, placed, drawBatch)
		}
		if calls > 10 {
			t.Fatal("the draw is not placed after 10 calls")
		}
	}
	if calls != 3 { // three batches, the last call applying the tick
		t.Errorf("%d tick calls, want 3", calls)
	}
	want := drawOrder(t, seed, users)
	list := listOf(t, s, q, "")
	if len(list) != n {
		t.Fatalf("%d listed, want %d", len(list), n)
	}
	b, _ := hex.DecodeString(seed)
	for p := range n {
		if !bytes.Equal(list[p].Key, DrawKey(b, want[p])) {
			t.Fatalf("place %d: not %s", p+1, want[p])
		}
	}
	line := rdb.ZRange(ctx, keysFor(q).waiting, 0, -1).Val()
	if !slices.Equal(line, want[5:]) {
		t.Fatal("the line is not the draw's order after the first five admitted")
	}
}

// A queue with no draw pays no Redis command for draws on enter or
// status: each makes exactly the commands it made before draws were
// sealed (TestNeverClosedPaysNoCommand's lists, this test run on its base
// too); and so does a queue whose opening is past and its draw made, for
// the places that arrived after it.
func TestNoDrawPaysNoCommand(t *testing.T) {
	ctx := context.Background()
	want := baseCommands
	for _, drawn := range []bool{false, true} {
		s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
		if drawn {
			// An opening with a draw of one, made and past.
			now, _ := rdb.Time(ctx).Result()
			schedule(t, s, q, now.Add(-time.Minute), now.Add(time.Hour))
			enter(t, s, q, "drawn")
			schedule(t, s, q, now.Add(-time.Minute), now.Add(-time.Millisecond))
			tick(t, s, rdb, q)
			forceNextInterval(t, rdb, q)
			tick(t, s, rdb, q)
		}
		enter(t, s, q, "warm-in") // loads the library; admitted on the token when not drawn
		enter(t, s, q, "warm-wait")
		status(t, s, q, "warm-wait")
		inside := "warm-in"
		if drawn {
			inside = "drawn"
		}
		for _, c := range []struct {
			name string
			do   func()
		}{
			{"enter (a new place)", func() { enter(t, s, q, "new") }},
			{"enter (the same place again)", func() { enter(t, s, q, "new") }},
			{"status (waiting)", func() { status(t, s, q, "new") }},
			{"status (inside)", func() { status(t, s, q, inside) }},
		} {
			got := strings.Join(commandsOf(t, ctx, rdb, q, c.do), " ")
			if got != want[c.name] {
				t.Errorf("drawn %t: %s made\n  %s\nwithout draws it made\n  %s", drawn, c.name, got, want[c.name])
			}
		}
		if sl := s.sealOf(q).cur.Load(); sl != nil && sl.id != "" {
			t.Errorf("drawn %t: the replica keeps a seal after the opening", drawn)
		}
	}
}

// BenchmarkDrawArgs is what a sealed draw adds to an enter batch in Go:
// each call's draw key and id hash (docs/perf-log/draw.md).
func BenchmarkDrawArgs(b *testing.B) {
	sl := &seals{}
	sl.cur.Store(&seal{gen: 1, id: "1", seed: make([]byte, 32)})
	calls := make([]Caller, maxBatch)
	for i := range calls {
		calls[i].User = fmt.Sprintf("a:%022d", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		drawArgs(sl, calls)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*maxBatch), "ns/call")
}
