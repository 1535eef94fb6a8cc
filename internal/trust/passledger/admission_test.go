package passledger

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/pass"
)

// The passes of one admission (one per status call, each with
// a jti of its own) share one count of networks, across replicas; another
// admission of the same member (after a re-enter) has its own.
func TestSeenCountsPerAdmission(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	replicas := make([]*Uses, 2)
	for i := range replicas {
		u, err := New(rdb, 3, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = u
	}
	q := uniqueQueue()
	let := 0
	for i := range 30 { // ten passes, thirty networks, two replicas
		c := claims(q, "a:holder", fmt.Sprintf("jti-%d", i%10))
		shared, err := replicas[i%2].Seen(ctx, c, netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}))
		if err != nil {
			t.Fatal(err)
		}
		if !shared {
			let++
		}
	}
	if let != 3 {
		t.Fatalf("%d of 30 networks let in with ten passes of one admission, want 3", let)
	}
	for i, u := range replicas {
		if shared, err := u.Shared(ctx, claims(q, "a:holder", "jti-new")); err != nil || !shared {
			t.Errorf("replica %d: a new pass of the admission: shared %v, %v", i, shared, err)
		}
	}
	again := claims(q, "a:holder", "jti-0")
	again.AdmittedAt = admittedAt.Add(time.Second) // entered again: a new admission
	if shared, err := replicas[0].Seen(ctx, again, netip.MustParseAddr("198.51.100.1")); err != nil || shared {
		t.Fatalf("the member's next admission: shared %v, %v", shared, err)
	}
	other := claims(q, "a:holder:1", "jti-0") // a member id that extends the first's
	if shared, err := replicas[1].Seen(ctx, other, netip.MustParseAddr("198.51.100.1")); err != nil || shared {
		t.Fatalf("another member: shared %v, %v", shared, err)
	}
}

// A client feeding one admission new addresses costs Redis at most
// max+1 members, and a pass of the admission with an earlier exp (an
// older one, before its session slid) never brings the record's end
// forward, which would restart the count for the newer passes.
func TestSeenBoundedAndKeptForTheLatestPass(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	q := uniqueQueue()
	newer := claims(q, "a:m", "jti-newer")
	newer.Expires = time.Now().Add(time.Hour)
	older := claims(q, "a:m", "jti-older")
	older.Expires = time.Now().Add(time.Minute)
	key := clientsKey(AdmissionOf(newer))
	for i := range 50 {
		u, err := New(rdb, 3, 2*time.Second) // a fresh replica each time: every call reaches Redis
		if err != nil {
			t.Fatal(err)
		}
		c := newer
		if i%2 == 1 {
			c = older
		}
		if _, err := u.Seen(ctx, c, netip.AddrFrom4([4]byte{203, 0, 113, byte(i)})); err != nil {
			t.Fatal(err)
		}
	}
	if n := rdb.SCard(ctx, key).Val(); n != 4 {
		t.Errorf("the admission's set holds %d networks after 50, want 4 (max+1)", n)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl < 30*time.Minute {
		t.Errorf("the set expires in %s: an older pass brought it forward from the newer pass's hour", ttl)
	}
}

// A property over generated uses (fixed seed): three admissions (two of
// one member, entered twice), each with several passes, used from
// generated IPv4 and IPv6 addresses through three replicas in random
// order. Each answer is what a model says: shared exactly when the
// admission's distinct networks (IPv6 by /64) seen so far exceed the
// limit, whichever pass or replica brings it; except that a replica
// answers a network it already let in from what it knew (no Redis call),
// so it may still say "not shared" there: the gate revokes the admission
// on the first "shared", which closes every replica's door within the
// re-check (and Shared, asked then, is exact).
func TestSeenProperty(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	const limit = 3
	var replicas []*Uses
	for range 3 {
		u, err := New(rdb, limit, 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		replicas = append(replicas, u)
	}
	q := uniqueQueue()
	admissions := []pass.Claims{claims(q, "a:one", ""), claims(q, "a:two", ""), claims(q, "a:two", "")}
	admissions[2].AdmittedAt = admittedAt.Add(time.Minute) // a:two entered again
	rng := rand.New(rand.NewPCG(26, 4))
	addr := func() netip.Addr {
		if rng.IntN(2) == 0 {
			return netip.AddrFrom4([4]byte{198, 51, 100, byte(rng.IntN(6))})
		}
		var b [16]byte
		b[0], b[1], b[7] = 0x20, 0x01, byte(rng.IntN(4)) // four /64s
		for i := 8; i < 16; i++ {
			b[i] = byte(rng.IntN(256))
		}
		return netip.AddrFrom16(b)
	}
	model := make([]map[netip.Prefix]bool, len(admissions))
	known := map[[2]int]map[netip.Prefix]bool{} // replica, admission -> networks it was asked about
	for i := range model {
		model[i] = map[netip.Prefix]bool{}
	}
	for step := range 600 {
		i, r := rng.IntN(len(admissions)), rng.IntN(len(replicas))
		c := admissions[i]
		c.ID = fmt.Sprintf("jti-%d-%d", i, rng.IntN(10)) // one of ten passes of the admission
		a := addr()
		nw := network(a)
		model[i][nw] = true
		want := len(model[i]) > limit
		got, err := replicas[r].Seen(ctx, c, a)
		if err != nil {
			t.Fatal(err)
		}
		if k := known[[2]int{r, i}]; got != want && !(want && k[nw]) {
			t.Fatalf("step %d, admission %d, replica %d, %v: shared %v, the model says %v (%d networks)", step, i, r, a, got, want, len(model[i]))
		}
		if known[[2]int{r, i}] == nil {
			known[[2]int{r, i}] = map[netip.Prefix]bool{}
		}
		known[[2]int{r, i}][nw] = true
		if shared, err := replicas[rng.IntN(len(replicas))].Shared(ctx, c); err != nil || shared != want {
			t.Fatalf("step %d: Shared %v, %v; the model says %v", step, shared, err, want)
		}
	}
	for i := range model {
		if len(model[i]) <= limit {
			t.Fatalf("admission %d met only %d networks: the run proves nothing", i, len(model[i]))
		}
	}
}
