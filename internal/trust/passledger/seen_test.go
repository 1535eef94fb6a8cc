package passledger

import (
	"context"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/pass"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

var queues atomic.Int64

// uniqueQueue is a queue of its own per test and run.
func uniqueQueue() string {
	return "passledger-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.FormatInt(queues.Add(1), 10)
}

// admittedAt is the start of the admissions of these tests (adm, in ms).
var admittedAt = time.UnixMilli(time.Now().UnixMilli())

// claims is a verified pass of member's admission to q that began at
// admittedAt, with the given jti, valid for a minute.
func claims(q, member, jti string) pass.Claims {
	return pass.Claims{Queue: q, Subject: member, ID: jti, AdmittedAt: admittedAt, NotBefore: admittedAt, Expires: time.Now().Add(time.Minute)}
}

// Many requests with one pass at once, from the address already seen
// and from new ones: the race detector checks the local record's locking
// (a known pass's flag was once read after the lock was let go), and
// the answer is exact: shared once more than maxClients networks used it.
func TestSeenConcurrent(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	u, err := New(rdb, 3, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := claims(uniqueQueue(), "a:m1", "jti-1")
	first := netip.MustParseAddr("192.0.2.1")
	if shared, err := u.Seen(ctx, c, first); err != nil || shared {
		t.Fatalf("first use: shared %v, %v", shared, err)
	}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			addr := first
			if i%8 == 0 { // 8 new networks beside the first
				addr = netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
			}
			if _, err := u.Seen(ctx, c, addr); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Nine networks in all, more than three: shared, for every address.
	for _, a := range []netip.Addr{first, netip.MustParseAddr("203.0.113.9")} {
		if shared, err := u.Seen(ctx, c, a); err != nil || !shared {
			t.Errorf("after nine networks, %v: shared %v, %v", a, shared, err)
		}
	}
}
