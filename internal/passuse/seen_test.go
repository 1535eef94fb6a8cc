package passuse

import (
	"context"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

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
	q, id := "passuse-"+strconv.FormatInt(time.Now().UnixNano(), 10), "jti-1" // a queue of its own per run
	until := time.Now().Add(time.Minute)
	first := netip.MustParseAddr("192.0.2.1")
	if shared, err := u.Seen(ctx, q, id, first, until); err != nil || shared {
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
			if _, err := u.Seen(ctx, q, id, addr, until); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// Nine networks in all, more than three: shared, for every address.
	for _, a := range []netip.Addr{first, netip.MustParseAddr("203.0.113.9")} {
		if shared, err := u.Seen(ctx, q, id, a, until); err != nil || !shared {
			t.Errorf("after nine networks, %v: shared %v, %v", a, shared, err)
		}
	}
}
