package failover

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A primary and two replicas watched by three Sentinels: a primary killed
// under load costs a bounded outage (503s, never a hang), after which the
// service finds the promoted replica through the Sentinels by itself.
// Run twice: WAIT off, then WAIT 1 on the promoted primary and the
// replica left.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("failover: a whole Redis topology and its failover; not under -short")
	}
	t.Parallel()
	set := newSentinelSet(t)
	for _, wait := range []int{0, 1} {
		t.Run(fmt.Sprintf("wait=%d", wait), func(t *testing.T) {
			t.Cleanup(func() { set.explain(t) })
			q := fmt.Sprintf("sentinel-w%d", wait)
			s := startService(t, set.url, []string{q}, wait)
			s.checkScripts(q)
			victim := set.primary
			o := killUnderLoad(t, s, q, fmt.Sprintf("w%d", wait), victim)
			t.Logf("sentinel, WAIT %d, primary %s killed: %s", wait, victim.addr, o)
			o.checkWait(t, wait)

			// The Sentinels promoted a replica, and the service uses it.
			promoted := set.sentinelsPrimary(t)
			var rest []*node
			for _, r := range set.replicas {
				if r.addr == promoted {
					set.primary = r
				} else {
					rest = append(rest, r)
				}
			}
			if set.primary == victim {
				t.Fatalf("sentinels name %s, not one of the replicas", promoted)
			}
			after := q + "-after"
			startService(t, set.url, []string{after}, wait).checkScripts(after)

			// The next run kills the promoted primary; the Sentinels made
			// the other replica its replica.
			set.replicas = rest
			set.waitReady(t)
		})
	}
}

// sentinelsPrimary returns the primary's address as the first Sentinel
// that answers names it.
func (s *sentinelSet) sentinelsPrimary(t *testing.T) string {
	t.Helper()
	for _, sn := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.addr, DialTimeout: time.Second})
		addr, err := c.GetMasterAddrByName(context.Background(), masterName).Result()
		c.Close()
		if err == nil {
			return net.JoinHostPort(addr[0], addr[1])
		}
	}
	t.Fatal("no sentinel answers")
	return ""
}

// explain logs, when t failed, what each Sentinel thinks and the end of
// its log: why it did or did not fail over.
func (s *sentinelSet) explain(t *testing.T) {
	if !t.Failed() {
		return
	}
	ctx := context.Background()
	for _, sn := range s.sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: sn.addr, DialTimeout: time.Second})
		m, err := c.Master(ctx, masterName).Result()
		r, _ := c.Replicas(ctx, masterName).Result()
		c.Close()
		t.Logf("sentinel %s: master %v %v; replicas %v", sn.addr, m, err, r)
		if rc, err := sn.ctr.Logs(ctx); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("sentinel %s log:\n%s", sn.addr, strings.Join(lines[max(0, len(lines)-30):], "\n"))
		}
	}
}
