package queue

import (
	"fmt"
	"testing"
	"time"
)

// A crowd of new clients, each from networks of its own, at 9,000 enters
// a second (the bench pair's rate): every call makes a bucket for its
// address and its two networks, which the sweep drops again once full.
//
//	go test -run '^$' -bench LocalStageCrowd -benchtime 2000000x ./internal/engine/queue/
func BenchmarkLocalStageCrowd(b *testing.B) {
	l := newLocalStage()
	client, place := Limit{Rate: 1, Burst: 10}, Limit{Rate: 1, Burst: 10}
	nets := [2]Limit{{Rate: 20, Burst: 1200}, {Rate: 50, Burst: 3000}}
	now := time.Unix(1_800_000_000, 0)
	step := time.Second / 9000
	callers := make([]Caller, b.N) // every call a new client
	for i := range callers {
		callers[i] = Caller{Client: fmt.Sprintf("2001:db8:%x::/64", i), Networks: [2]string{fmt.Sprintf("2001:db8:%x::/56", i), fmt.Sprintf("2001:db9:%x::/48", i)}}
	}
	b.ResetTimer()
	for i := range b.N {
		c := callers[i]
		now = now.Add(step)
		if err := l.admit("default", OpEnter, &c, client, place, nets, now); err != nil {
			b.Fatal(err)
		}
	}
}
