package queue

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// What the network defences cost an enter in Redis, in the configuration
// the round measures: a crowd in which every enter is the first place of
// its network and site (an IPv6 /56 and /48 each), place limits per client
// and per place on, many callers at once (batched as under load). Each
// reports redis-µs/op (measureRedis):
//
//	go test -run '^$' -bench EnterCrowd -benchtime 20000x ./internal/engine/queue/
//
// Bare: client and place limits only, as before any network defence.
// Networks: the network and site limits as well. Priced: and the price.
func BenchmarkEnterCrowdBare(b *testing.B)     { benchCrowd(b, false, false) }
func BenchmarkEnterCrowdNetworks(b *testing.B) { benchCrowd(b, true, false) }
func BenchmarkEnterCrowdPriced(b *testing.B)   { benchCrowd(b, true, true) }

func benchCrowd(b *testing.B, networks, priced bool) {
	settings := benchSettings
	settings.Limits = Limits{
		EnterPerClient: Limit{Rate: 5, Burst: 300},
		EnterPerPlace:  Limit{Rate: 1, Burst: 5},
	}
	if networks {
		settings.Limits.EnterPerNetwork = Limit{Rate: 20, Burst: 1200}
		settings.Limits.EnterPerSite = Limit{Rate: 50, Burst: 3000}
	}
	if priced {
		settings.Price = Price{Bits: 13, CalmArrivals: 100, MaxBits: DefaultMaxBits}
	}
	s, q, rdb := benchStore(b, settings)
	ctx := context.Background()
	run := time.Now().UnixNano() % 0xffff
	var n atomic.Int64
	measureParallel(b, rdb, func() error {
		i := n.Add(1)
		// 2001:db8:RRRR:SSNN::/64: a /48 and a /56 of its own per caller.
		site := fmt.Sprintf("2001:%x:%x", run, i)
		c := Caller{
			User:       userID(int(i)),
			Client:     site + "::/64",
			Networks:   [2]string{site + "::/56", site + "::/48"},
			Proved:     true,
			Credential: true, // a place credential, as the waiting page enters
		}
		_, err := s.Enter(ctx, q, Entry{Caller: c})
		return err
	})
}
