package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// codesQueue is a queue with a "vip" lane, the line filled so nobody is
// admitted at once (an hour's interval, no tokens left), and a batch of
// codes for the lane: digests d0..d(n-1), uses each.
func codesQueue(t *testing.T, n, uses int) (*Store, string, *redis.Client, CodeBatch) {
	t.Helper()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "vip", Share: 0.5}})
	enter(t, s, q, "a:first") // takes the one token: everyone after waits
	b := addCodes(t, s, q, CodeBatch{Lane: "vip", Uses: uses}, n, "d")
	return s, q, rdb, b
}

// addCodes stores a batch of n digests "<prefix><i>-<lane>".
func addCodes(t *testing.T, s *Store, q string, b CodeBatch, n int, prefix string) CodeBatch {
	t.Helper()
	digests := make([]string, n)
	for i := range digests {
		digests[i] = fmt.Sprintf("%s%d-%s", prefix, i, b.Lane)
	}
	out, err := NewInspector(s).AddCodes(context.Background(), q, b, digests)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func redeemAs(s *Store, q, digest, user string) (Ticket, string, error) {
	return s.Redeem(context.Background(), q, digest, Entry{Caller: Caller{User: user}})
}

// A code moves a waiting place into its lane at its arrival number and
// spends one use; the answer names the lane's member.
func TestRedeemMovesAPlaceAtItsArrivalNumber(t *testing.T) {
	s, q, _, b := codesQueue(t, 1, 1)
	for _, u := range []string{"a:w1", "a:w2", "a:w3"} {
		enter(t, s, q, u)
	}
	before := status(t, s, q, "a:w2")
	tk, member, err := redeemAs(s, q, "d0-vip", "a:w2")
	if err != nil {
		t.Fatal(err)
	}
	if member != "l:vip:a:w2" || LaneOf(member) != "vip" {
		t.Fatalf("member %q, want the vip lane's", member)
	}
	if tk.Status != Waiting || tk.Position != 1 || tk.Seq != before.Seq {
		t.Fatalf("after the code: %+v; want waiting first in the lane at arrival number %d", tk, before.Seq)
	}
	if old := status(t, s, q, "a:w2"); old.Status != NotWaiting {
		t.Fatalf("the old member still holds a place: %+v", old)
	}
	if w3 := status(t, s, q, "a:w3"); w3.Position != 2 {
		t.Fatalf("a:w3 at %d, want 2: the moved place left the general line", w3.Position)
	}
	// The lane's next arrival comes behind the moved place.
	if next := enter(t, s, q, "l:vip:next"); next.Position != 2 || next.Seq <= before.Seq {
		t.Fatalf("the lane's next arrival: %+v", next)
	}
	bs, err := NewInspector(s).CodeBatches(context.Background(), q)
	if err != nil || len(bs) != 1 || bs[0].ID != b.ID || bs[0].Used != 1 || bs[0].Codes != 1 {
		t.Fatalf("batches %+v (%v), want one with one use spent", bs, err)
	}
	// Spent: a second redeemer gets nothing, and keeps its place.
	if _, _, err := redeemAs(s, q, "d0-vip", "a:w3"); !errors.Is(err, ErrInvalidCode) {
		t.Fatalf("a spent code: %v, want ErrInvalidCode", err)
	}
	if w3 := status(t, s, q, "a:w3"); w3.Status != Waiting || w3.Position != 2 {
		t.Fatalf("a:w3 after a spent code: %+v", w3)
	}
}

// A caller with no place enters (the usual enter) and moves to the lane.
func TestRedeemEntersANewcomerInTheLane(t *testing.T) {
	s, q, _, _ := codesQueue(t, 1, 1)
	enter(t, s, q, "a:w1")
	tk, member, err := redeemAs(s, q, "d0-vip", "a:new")
	if err != nil || member != "l:vip:a:new" || tk.Status != Waiting || tk.Position != 1 {
		t.Fatalf("newcomer: %+v %q %v", tk, member, err)
	}
	if st := status(t, s, q, "a:new"); st.Status != NotWaiting {
		t.Fatalf("the newcomer's general place is left: %+v", st)
	}
}

// A site account's place moves to the account's lane member.
func TestRedeemMovesAnAccount(t *testing.T) {
	s, q, _, _ := codesQueue(t, 1, 1)
	enter(t, s, q, "u:alice")
	_, member, err := redeemAs(s, q, "d0-vip", "u:alice")
	if err != nil || member != AccountMember("vip", "alice") {
		t.Fatalf("account: %q %v", member, err)
	}
}

// Wrong, spent, expired and revoked codes change nothing: no place
// moves, no place is made, no use is spent.
func TestWrongCodesChangeNothing(t *testing.T) {
	s, q, rdb, b := codesQueue(t, 2, 1)
	ctx := context.Background()
	in := NewInspector(s)
	expiring := addCodes(t, s, q, CodeBatch{Lane: "vip", Uses: 1, ExpiresAt: time.Now().Add(time.Second)}, 1, "e")
	enter(t, s, q, "a:w1")
	if err := in.RevokeCodes(ctx, q, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := in.RevokeCodes(ctx, q, b.ID); err != nil {
		t.Fatalf("revoking again: %v", err)
	}
	if err := in.RevokeCodes(ctx, q, "nosuch"); !errors.Is(err, ErrBatchNotFound) {
		t.Fatalf("revoking no batch: %v", err)
	}
	// The expiring batch's code expires in a second: wait for Redis's clock to pass it.
	deadline := time.Now().Add(5 * time.Second)
	for !time.Now().After(expiring.ExpiresAt.Add(50 * time.Millisecond)) {
		if time.Now().After(deadline) {
			t.Fatal("the clock did not pass expires_at")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := snapshotKeys(t, rdb, q)
	for _, d := range []string{"nope", "d0-vip", "d1-vip", "e0-vip", "d0-vipx", ""} {
		for _, u := range []string{"a:w1", "a:stranger"} {
			if _, _, err := redeemAs(s, q, d, u); !errors.Is(err, ErrInvalidCode) && !(d == "" && err != nil) {
				t.Fatalf("code %q by %s: %v, want ErrInvalidCode", d, u, err)
			}
		}
	}
	if after := snapshotKeys(t, rdb, q); after != before {
		t.Fatalf("wrong codes changed Redis:\nbefore %s\nafter  %s", before, after)
	}
	bs, _ := in.CodeBatches(ctx, q)
	for _, x := range bs {
		if x.Used != 0 {
			t.Fatalf("batch %s: %d uses spent", x.ID, x.Used)
		}
		if x.ID == b.ID && x.RevokedAt.IsZero() {
			t.Fatal("the revoked batch is not listed as revoked")
		}
	}
	if n, _ := rdb.HLen(ctx, keysFor(q).codes).Result(); n != 1 {
		t.Fatalf("%d codes held, want the revoked batch's forgotten (1 left)", n)
	}
}

// snapshotKeys is the queue's line keys' contents, to compare.
func snapshotKeys(t *testing.T, rdb *redis.Client, q string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, lane := range []string{"", "vip"} {
		k := keysForLine(q, lane)
		for _, z := range []string{k.waiting, k.held, k.heard} {
			v, _ := rdb.ZRangeWithScores(ctx, z, 0, -1).Result()
			fmt.Fprintf(&b, "%s=%v ", z, v)
		}
		d, _ := rdb.SMembers(ctx, k.draw).Result()
		sq, _ := rdb.Get(ctx, k.seq).Result()
		fmt.Fprintf(&b, "%s=%v %s=%s ", k.draw, d, k.seq, sq)
	}
	c, _ := rdb.HGetAll(ctx, keysFor(q).codes).Result()
	bt, _ := rdb.HGetAll(ctx, keysFor(q).codeBatches).Result()
	fmt.Fprintf(&b, "codes=%v batches=%v", c, bt)
	return b.String()
}

// 50 redeemers race for a code of 3 uses: exactly 3 move, the use count
// ends at 0 and never goes below.
func TestConcurrentRedeemersNeverOverspend(t *testing.T) {
	const redeemers, uses = 50, 3
	s, q, rdb, _ := codesQueue(t, 1, uses)
	ctx := context.Background()
	for i := range redeemers {
		enter(t, s, q, fmt.Sprintf("a:r%d", i))
	}
	var moved, refused atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range redeemers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, member, err := redeemAs(s, q, "d0-vip", fmt.Sprintf("a:r%d", i))
			switch {
			case err == nil && LaneOf(member) == "vip":
				moved.Add(1)
			case errors.Is(err, ErrInvalidCode):
				refused.Add(1)
			default:
				t.Errorf("redeemer %d: %q %v", i, member, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if moved.Load() != uses || refused.Load() != redeemers-uses {
		t.Fatalf("%d moved, %d refused; want %d and %d", moved.Load(), refused.Load(), uses, redeemers-uses)
	}
	v, _ := rdb.HGet(ctx, keysFor(q).codes, "d0-vip").Result()
	if !strings.HasPrefix(v, "0 ") {
		t.Fatalf("the code holds %q, want 0 uses left", v)
	}
	if n, _ := rdb.ZCard(ctx, keysForLine(q, "vip").waiting).Result(); n != uses {
		t.Fatalf("the lane holds %d places, want %d", n, uses)
	}
	if n, _ := rdb.ZCard(ctx, keysFor(q).waiting).Result(); n != redeemers-uses {
		t.Fatalf("the general line holds %d places, want %d", n, redeemers-uses)
	}
}

// A batch is all or nothing: a code the queue holds already stores none
// of the batch; out of bounds is refused.
func TestAddCodesAllOrNothing(t *testing.T) {
	s, q, rdb, _ := codesQueue(t, 3, 1)
	ctx := context.Background()
	in := NewInspector(s)
	digests := []string{"fresh-1", "fresh-2", "d2-vip"}
	if _, err := in.AddCodes(ctx, q, CodeBatch{Lane: "vip", Uses: 1}, digests); !errors.Is(err, ErrCodeExists) {
		t.Fatalf("a held code: %v", err)
	}
	if n, _ := rdb.HLen(ctx, keysFor(q).codes).Result(); n != 3 {
		t.Fatalf("%d codes, want the 3 before", n)
	}
	for _, c := range []struct {
		b       CodeBatch
		digests []string
		want    error
	}{
		{CodeBatch{Lane: "nosuch", Uses: 1}, []string{"x"}, ErrUnknownLane},
		{CodeBatch{Lane: "Bad Lane", Uses: 1}, []string{"x"}, ErrInvalidCodeBatch},
		{CodeBatch{Lane: "vip", Uses: 0}, []string{"x"}, ErrInvalidCodeBatch},
		{CodeBatch{Lane: "vip", Uses: 1}, nil, ErrInvalidCodeBatch},
		{CodeBatch{Lane: "vip", Uses: 1}, []string{"x", "x"}, ErrInvalidCodeBatch},
		{CodeBatch{Lane: "vip", Uses: 1, ExpiresAt: time.Now().Add(-time.Minute)}, []string{"x"}, ErrInvalidCodeBatch},
		{CodeBatch{Lane: "vip", Uses: 1}, make([]string, MaxCodesPerBatch+1), ErrInvalidCodeBatch},
	} {
		if _, err := in.AddCodes(ctx, q, c.b, c.digests); !errors.Is(err, c.want) {
			t.Errorf("%+v with %d codes: %v, want %v", c.b, len(c.digests), err, c.want)
		}
	}
}

// A queue whose enters bring no code pays no command for codes: an
// enter and a status make the commands they made before codes existed
// (TestNeverClosedPaysNoCommand's lists), with a batch of codes stored.
func TestCodesCostNothingWithoutACode(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	setLanes(t, s, q, Lanes{{Name: "vip", Share: 0.5}})
	addCodes(t, s, q, CodeBatch{Lane: "vip", Uses: 1}, 10, "d")
	enter(t, s, q, "warm-in")
	enter(t, s, q, "warm-wait")
	status(t, s, q, "warm-wait")
	for _, c := range []struct {
		name string
		do   func()
	}{
		{"enter (a new place)", func() { enter(t, s, q, "new") }},
		{"status (waiting)", func() { status(t, s, q, "new") }},
	} {
		got := strings.Join(commandsOf(t, ctx, rdb, q, c.do), " ")
		for _, w := range []string{"codes", "HGET "} {
			if strings.Contains(got, w) {
				t.Errorf("%s touched the codes: %s", c.name, got)
			}
		}
		if want := baseCommands[c.name]; got != want {
			t.Errorf("%s made\n  %s\nwithout codes it makes\n  %s", c.name, got, want)
		}
	}
}
