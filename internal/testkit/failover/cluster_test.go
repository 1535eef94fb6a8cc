package failover

import (
	"fmt"
	"slices"
	"testing"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// A Redis Cluster of three primaries and three replicas: queues spread
// over the primaries all work, and a primary killed under load costs its
// queues a bounded outage (503s, never a hang), after which the service
// recovers by itself on the promoted replica. Run twice on one cluster:
// WAIT off on one queue's primary, then WAIT 1 on another's.
func TestClusterFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("failover: a whole Redis topology and its failover; not under -short")
	}
	t.Parallel()
	c := newCluster(t)

	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("wait=%d", wait), func(t *testing.T) {
			// Fresh queues, one per primary (the hash tag {name} picks the
			// slot); the victim is a primary that still has its replica.
			prefix := fmt.Sprintf("w%d", wait)
			byPrimary := map[string]string{}
			var queues []string
			for primary := range c.liveReplicas() {
				q := c.queueOn(t, primary, prefix)
				byPrimary[primary], queues = q, append(queues, q)
			}
			slices.Sort(queues)
			t.Logf("queues by primary: %v", byPrimary)
			s := startService(t, c.url, queues, wait)
			for _, q := range queues {
				s.checkScripts(q)
			}
			victim := c.nodes[c.primaryOf(t, rediskeys.Waiting(queues[0]))]
			o := killUnderLoad(t, s, queues[0], prefix, victim)
			t.Logf("cluster, WAIT %d, primary %s of %s killed: %s", wait, victim.addr, queues[0], o)
			o.checkWait(t, wait)
			// The promoted replica serves the killed primary's slots, and
			// every script runs there, on a fresh queue of its own.
			promoted := c.replicas[victim.addr]
			if p := c.primaryOf(t, rediskeys.Waiting(queues[0])); p != promoted {
				t.Errorf("%s served by %s, want its replica %s", queues[0], p, promoted)
			}
			after := c.queueOn(t, promoted, prefix+"-after")
			s2 := startService(t, c.url, []string{after}, wait)
			s2.checkScripts(after)
		})
	}
}
