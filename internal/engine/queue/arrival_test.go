package queue

import (
	"context"
	"testing"
)

// A status answers the place's current arrival number, its score in the
// line, whatever number the caller's credential carries: a member that
// entered again has a new one.
func TestStatusCarriesTheCurrentArrival(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, q, rdb := newStore(t, hour)
	tick(t, s, rdb, q)
	runEnterCall(t, s, q, "in1", "in2", "a", "b", "c")
	first := enter(t, s, q, "b")
	again := enter(t, s, q, "b")
	if again.Seq <= first.Seq {
		t.Fatalf("entering again: seq %d, first %d", again.Seq, first.Seq)
	}
	score, err := rdb.ZScore(ctx, keysFor(q).waiting, "b").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Caller{{User: "b"}, {User: "b", Seq: first.Seq, Credential: true}, {User: "b", Seq: again.Seq, Credential: true}} {
		st, err := s.Status(ctx, q, c)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status != Waiting || st.Seq != int64(score) || st.Position != 3 {
			t.Fatalf("status with seq %d: %+v, want arrival %v at position 3", c.Seq, st, score)
		}
	}
	// Nobody else's answer carries a number: admitted, gone.
	for _, u := range []string{"in1", "gone"} {
		if st := status(t, s, q, u); st.Seq != 0 {
			t.Fatalf("%s: %+v, want no arrival number", u, st)
		}
	}
}
