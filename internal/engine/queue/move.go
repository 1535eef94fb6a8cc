package queue

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"
)

// The moves of a place to another device (internal/trust/handoff asks for them;
// the queue alone writes the gen and moved keys).
const (
	// MovedKeep is how long a move stays in the moved ZSET, which the
	// replicas read (handoff.Tracker): a page that still polls with the
	// older credential far back in the line learns of the move within it.
	MovedKeep = time.Hour
	// genKeep is how long a queue's gen HASH is kept after its last move.
	genKeep = 7 * 24 * time.Hour
)

// ErrNotWaiting refuses to move a place that is neither in line nor in a
// scheduled opening's draw: only such a place moves.
var ErrNotWaiting = errors.New("queue: only a place waiting in line can move")

// move.lua's status codes (its header), in its order.
const (
	moveDone       = 1
	moveStale      = 2
	moveNotWaiting = 3
)

// Move is a place that moved: the generation of its new holder's
// credential and its arrival number (0: in a draw).
type Move struct {
	Gen int64
	Seq int64
}

// MovePlace moves user's place in queue to another device, its holder
// proving generation gen (a hand-over made with a credential of it): the
// place's generation goes up past gen, so every credential issued before
// is refused from then on (ErrMoved), and replicas learn of the move from
// the moved ZSET. Of any moves of one place at one generation at most one
// succeeds (none if the place no longer waits); the others fail with
// ErrMoved. A place neither in line nor in
// a draw fails with ErrNotWaiting. With the replica WAIT on, the move is
// waited for as enter and leave are (replica.go).
func (s *Store) MovePlace(ctx context.Context, queue, user string, gen int64) (Move, error) {
	q, err := s.line(queue, user)
	if err != nil {
		return Move{}, err
	}
	if err := ValidateUserID(user); err != nil {
		return Move{}, err
	}
	keys := []string{q.keys.gen, q.keys.moved, q.keys.waiting, q.keys.draw}
	v, err := WaitFor(ctx, s.timeout, func(ctx context.Context) ([]int64, error) {
		res, _ := s.runWaited(ctx, q, moveScript, keys, user, gen, MovedKeep.Milliseconds(), genKeep.Milliseconds())
		return res.Int64Slice()
	})
	if err != nil {
		return Move{}, fmt.Errorf("queue: move: %w", err)
	}
	switch {
	case len(v) == 3 && v[0] == moveDone:
		return Move{Gen: v[1], Seq: v[2]}, nil
	case len(v) == 1 && v[0] == moveStale:
		return Move{}, ErrMoved
	case len(v) == 1 && v[0] == moveNotWaiting:
		return Move{}, ErrNotWaiting
	}
	return Move{}, fmt.Errorf("queue: move: unexpected reply %v", v)
}
