package queue

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// Every script and command of the store runs on Redis in cluster mode,
// which refuses keys that span slots: the hash tags keep a queue's keys in
// one slot.
func TestRunsOnRedisCluster(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewClusterNode(t)
	ctx := context.Background()

	// The check is real: keys in two slots are refused.
	err := rdb.Eval(ctx, "return redis.call('MGET', KEYS[1], KEYS[2])", []string{"wr:{a}:x", "wr:{b}:x"}).Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot script: %v, want CROSSSLOT", err)
	}

	s, err := NewStore(rdb, []string{"default", "other"}, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := NewInspector(s).Seed(ctx); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"default", "other"} {
		for i, u := range []string{"a", "b", "c", "d"} {
			tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: u}})
			if err != nil {
				t.Fatalf("%s enter: %v", q, err)
			}
			if want := map[bool]Status{true: Entered, false: Waiting}[i < 2]; tk.Status != want {
				t.Fatalf("%s %s: %s, want %s", q, u, tk.Status, want)
			}
		}
		if tk, err := s.Status(ctx, q, Caller{User: "d"}); err != nil || tk.Position != 2 {
			t.Fatalf("%s status: %+v %v", q, tk, err)
		}
		if err := s.Leave(ctx, q, Caller{User: "c"}); err != nil {
			t.Fatal(err)
		}
		if err := NewInspector(s).UpdateSettings(ctx, q, Update{RefillSize: ptr(3)}); err != nil {
			t.Fatal(err)
		}
		res, err := s.Tick(ctx, q)
		if err != nil || !res.Applied || res.Moved != 1 || res.Tokens != 2 {
			t.Fatalf("%s tick: %+v %v", q, res, err)
		}
		info, err := s.Info(ctx, q)
		if err != nil || info.Entered != 3 || info.Settings.RefillSize != 3 {
			t.Fatalf("%s info: %+v %v", q, info, err)
		}
		if points, err := NewInspector(s).History(ctx, q); err != nil || len(points) != 1 || points[0].Admitted != 2 {
			t.Fatalf("%s history: %+v %v", q, points, err)
		}
	}
}
