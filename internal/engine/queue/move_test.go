package queue

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"
)

// moveSettings admit one user on the first token and then nobody for an
// hour: every later user waits.
var moveSettings = Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}

func holderOf(user string, gen int64) Caller {
	return Caller{User: user, Proved: true, Credential: true, Gen: gen}
}

// TestMovePlaceOnceUnderRace races many moves of one place at one
// generation: exactly one applies, the place keeps its member and
// position, and only the new generation's credential still works.
func TestMovePlaceOnceUnderRace(t *testing.T) {
	s, q, rdb := newStore(t, moveSettings)
	ctx := context.Background()
	enter(t, s, q, "a") // the token: admitted
	enter(t, s, q, "b")
	before := enter(t, s, q, "c")
	if before.Status != Waiting || before.Position != 2 {
		t.Fatalf("c before: %+v", before)
	}
	const movers = 50
	var (
		wg              sync.WaitGroup
		mu              sync.Mutex
		won, stale, bad int
		got             Move
	)
	for range movers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := s.MovePlace(ctx, q, "c", 0)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
				got = m
			case errors.Is(err, ErrMoved):
				stale++
			default:
				bad++
				t.Errorf("move: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 || stale != movers-1 || bad != 0 {
		t.Fatalf("%d moves applied, %d refused as stale, %d failed; want 1, %d, 0", won, stale, bad, movers-1)
	}
	seq, err := rdb.ZScore(ctx, keysFor(q).waiting, "c").Result()
	if err != nil || got.Gen != 1 || got.Seq != int64(seq) {
		t.Fatalf("move = %+v, arrival number %v (%v); want generation 1 and the place's", got, seq, err)
	}
	if _, err := rdb.ZScore(ctx, keysFor(q).moved, "c").Result(); err != nil {
		t.Fatalf("move not recorded in the moved ZSET: %v", err)
	}
	if _, err := s.Status(ctx, q, holderOf("c", 0)); !errors.Is(err, ErrMoved) {
		t.Fatalf("old credential after the move: %v, want ErrMoved", err)
	}
	after, err := s.Status(ctx, q, holderOf("c", 1))
	if err != nil || after.Status != Waiting || after.Position != 2 {
		t.Fatalf("new credential after the move: %+v, %v; want waiting at 2", after, err)
	}
	// The new holder moves it on; the old generation cannot.
	if m, err := s.MovePlace(ctx, q, "c", 1); err != nil || m.Gen != 2 {
		t.Fatalf("second move: %+v, %v", m, err)
	}
	if _, err := s.MovePlace(ctx, q, "c", 1); !errors.Is(err, ErrMoved) {
		t.Fatalf("second move again: %v, want ErrMoved", err)
	}
}

// TestMovePlaceRefusals: only a place in line (or in a draw) moves, and a
// refused move writes nothing.
func TestMovePlaceRefusals(t *testing.T) {
	s, q, rdb := newStore(t, moveSettings)
	ctx := context.Background()
	enter(t, s, q, "a") // admitted, not waiting
	for _, user := range []string{"a", "nobody"} {
		if _, err := s.MovePlace(ctx, q, user, 0); !errors.Is(err, ErrNotWaiting) {
			t.Errorf("move %s: %v, want ErrNotWaiting", user, err)
		}
	}
	if n := rdb.Exists(ctx, keysFor(q).gen, keysFor(q).moved).Val(); n != 0 {
		t.Errorf("refused moves wrote %d keys", n)
	}
	if _, err := s.MovePlace(ctx, "nope", "a", 0); !errors.Is(err, ErrUnknownQueue) {
		t.Errorf("unknown queue: %v", err)
	}
	if _, err := s.MovePlace(ctx, q, "", 0); !errors.Is(err, ErrInvalidUserID) {
		t.Errorf("empty user: %v", err)
	}
	// A draw's participant moves, with no arrival number yet.
	if err := rdb.SAdd(ctx, keysFor(q).draw, "d").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := s.MovePlace(ctx, q, "d", 0); err != nil || m.Gen != 1 || m.Seq != 0 {
		t.Errorf("move in a draw: %+v, %v", m, err)
	}
}

// TestMovePlaceAfterGenExpired: once the gen HASH expired (a week after
// the queue's last move) a credential may hold a generation above the
// stored 0; it still moves its place, past its own generation.
func TestMovePlaceAfterGenExpired(t *testing.T) {
	s, q, _ := newStore(t, moveSettings)
	enter(t, s, q, "a")
	enter(t, s, q, "b")
	if m, err := s.MovePlace(context.Background(), q, "b", 3); err != nil || m.Gen != 4 {
		t.Fatalf("move at generation 3: %+v, %v; want generation 4", m, err)
	}
}

// TestMoveCodesMirrorLua holds move.go's status codes to move.lua's.
func TestMoveCodesMirrorLua(t *testing.T) {
	src, err := os.ReadFile("scripts/move.lua")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"MOVE_DONE": moveDone, "MOVE_STALE": moveStale, "MOVE_NOT_WAITING": moveNotWaiting}
	found := regexp.MustCompile(`(?m)^local (MOVE_\w+) = (\d+)$`).FindAllStringSubmatch(string(src), -1)
	if len(found) != len(want) {
		t.Fatalf("move.lua names %d codes, move.go %d", len(found), len(want))
	}
	for _, f := range found {
		if n, _ := strconv.Atoi(f[2]); want[f[1]] != n {
			t.Errorf("%s is %d in move.lua, %d in move.go", f[1], n, want[f[1]])
		}
	}
}
