package httpapi

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestMeasureNetworkFlood counts the places one network gets in one go
// from 8 of its client budgets, without solving anything, at the
// service's default limits: 8 /64s of one /56, and 8 addresses of one /24.
//
//	WAITROOM_BOTS_MEASURE=1 go test -run TestMeasureNetworkFlood -v ./internal/web/httpapi/
func TestMeasureNetworkFlood(t *testing.T) {
	if os.Getenv("WAITROOM_BOTS_MEASURE") != "1" {
		t.Skip("a measurement: set WAITROOM_BOTS_MEASURE=1")
	}
	for _, priced := range []bool{false, true} {
		settings := queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Limits: queue.Limits{
			EnterPerClient: queue.Limit{Rate: 5, Burst: 300}, EnterPerPlace: queue.Limit{Rate: 1, Burst: 5},
			StatusPerClient: queue.Limit{Rate: 200, Burst: 2000}, StatusPerPlace: queue.Limit{Rate: 5, Burst: 20},
			EnterPerNetwork: queue.Limit{Rate: 20, Burst: 1200}, EnterPerSite: queue.Limit{Rate: 50, Burst: 3000},
		}}
		if priced {
			settings.Price = queue.Price{Bits: 13, CalmArrivals: 100}
		}
		trusted, _ := clientip.New([]string{"127.0.0.1/32", "::1/128"})
		e := newEnv(t, redistest.Client(t), settings, testTimeout, Options{ClientIP: trusted})
		for _, net := range []struct{ name, addr string }{{"/56", "2001:db8:9:1%02x::1"}, {"/24", "203.0.113.%d"}} {
			got, refused := 0, map[int]int{}
			start := time.Now()
			for c := range 8 {
				for range 300 {
					r := e.do("POST", "/api/v1/queues/"+e.queue+"/enter", "{}", "X-Forwarded-For", fmt.Sprintf(net.addr, 1+c))
					if r.status == 200 {
						got++
					} else {
						refused[r.status]++
					}
				}
			}
			t.Logf("priced=%v %s: 8 budgets x 300 enters: %d places, refused %v, in %s", priced, net.name, got, refused, time.Since(start).Round(time.Millisecond))
		}
	}
}
