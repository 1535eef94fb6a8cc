package handoff

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// TestDeathBetweenClaimAndMove: a replica that uses a hand-over and dies
// before the queue moves the place leaves the hand-over spent and the
// place with its old device, at its position; a new hand-over moves it.
func TestDeathBetweenClaimAndMove(t *testing.T) {
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	e.line(t, q, "a", "b", "c")
	h, err := e.svc.Create(ctx, q, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	// The claim alone, as a replica that died right after it ran it.
	k := keysFor(q)
	v, err := claimScript.Run(ctx, e.rdb, []string{k.live, k.expires, k.unused, k.queueTries},
		tokenField(h.Token), 0, ClientWindow.Milliseconds(), QueueAttempts, QueueWindow.Milliseconds()).Slice()
	if err != nil || len(v) != 3 || v[0] != int64(1) {
		t.Fatalf("claim: %v, %v", v, err)
	}
	if _, _, err := e.svc.Enter(ctx, q, h.Token, "", "", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("the spent hand-over again: %v, want ErrInvalid", err)
	}
	tk, err := e.store.Status(ctx, q, holder("c", 0))
	if err != nil || tk.Status != queue.Waiting || tk.Position != 2 {
		t.Fatalf("the old device after the lost move: %+v, %v; want waiting at 2", tk, err)
	}
	h2, err := e.svc.Create(ctx, q, "c", 0)
	if err != nil {
		t.Fatal(err)
	}
	m, tk, err := e.svc.Enter(ctx, q, h2.Token, "", "", 0)
	if err != nil || m.Member != "c" || m.Gen != 1 || tk.Position != 2 {
		t.Fatalf("a new hand-over: %+v, %+v, %v", m, tk, err)
	}
}

// TestTrackerReadsMovesPageByPage: more moves than a page, many of them
// in one millisecond across page edges, all reach the view.
func TestTrackerReadsMovesPageByPage(t *testing.T) {
	e := newEnv(t, 1)
	q := e.queues[0]
	ctx := context.Background()
	at := time.Now().UnixMilli()
	const n = 2*movedPage + 500
	var zs []redis.Z
	for i := range n {
		score := at // the first 1,500: one millisecond, over two pages
		if i >= 1500 {
			score = at + int64(i%7)
		}
		zs = append(zs, redis.Z{Score: float64(score), Member: fmt.Sprintf("m%d", i)})
	}
	if err := e.rdb.ZAdd(ctx, rediskeys.Moved(q), zs...).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.tracker.Refresh(ctx, q); err != nil {
		t.Fatal(err)
	}
	if got := len(e.tracker.views[q].seen.Load().members); got != n {
		t.Fatalf("view holds %d moves, want %d", got, n)
	}
	for i := range n {
		if !e.tracker.Recent(q, fmt.Sprintf("m%d", i)) {
			t.Fatalf("m%d not seen", i)
		}
	}
}
