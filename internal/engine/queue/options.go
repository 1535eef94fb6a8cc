package queue

// An Option sets one of the store's collaborators when NewStore builds it.
// The store never changes them afterwards, so the request path reads them
// without locks.
type Option func(*Store) error

// WithReplicaWait turns the replica WAIT on (w.Replicas > 0; see
// ReplicaWait) for what a failover must not undo: enter, leave, done and
// a place's move (MovePlace), so a move once answered stays made. NewStore fails if w cannot work: a negative count, a
// timeout under 1ms or not below the store's, or a client that cannot
// pipeline to one node.
func WithReplicaWait(w ReplicaWait) Option {
	return func(s *Store) error {
		if err := s.checkReplicaWait(w); err != nil {
			return err
		}
		s.replica.wait = w
		return nil
	}
}

// WithRecentMoves gives the far-back status path what it asks before it
// answers from the snapshot (RecentMoves). nil means no hand-overs.
func WithRecentMoves(m RecentMoves) Option {
	return func(s *Store) error {
		if m != nil {
			s.moves = m
		}
		return nil
	}
}

// WithObserver makes the observer build returns hear what the store does.
// build gets the store itself, with the options before this one applied,
// because an observer may read the store it hears (the metrics read each
// queue's figures at scrape time). build returning nil means no observer.
func WithObserver(build func(*Store) Observer) Option {
	return func(s *Store) error {
		if o := build(s); o != nil {
			s.observer = o
		}
		return nil
	}
}

// WithHumanCheck tells the store whether the human check's provider
// answers now (internal/trust/humancheck's Available): while it does, a queue
// whose human_check asks for one answers ErrHumanCheckRequired; while it
// does not, the store asks proof of work at the ceiling instead. Without
// this option no human check is ever asked.
func WithHumanCheck(available func() bool) Option {
	return func(s *Store) error {
		s.human = available
		return nil
	}
}
