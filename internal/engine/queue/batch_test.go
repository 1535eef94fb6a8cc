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

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// These tests drive the batcher with a run function of their own (no Redis
// is involved in gathering calls), so each interleaving is forced.

// blockingRun records each batch and blocks it until released.
type blockingRun struct {
	batches chan []string
	release chan error
}

func newBlockingRun() *blockingRun {
	return &blockingRun{batches: make(chan []string, 16), release: make(chan error)}
}

func (r *blockingRun) run(_ context.Context, calls []Caller) ([]Ticket, error) {
	users := callUsers(calls)
	tickets := make([]Ticket, len(users))
	for i := range users {
		tickets[i] = Ticket{Status: Waiting, Position: int64(i + 1)}
	}
	r.batches <- users
	return tickets, <-r.release
}

// newBatcher returns a batcher whose calls time out long after any test.
func newBatcher(run func(context.Context, []Caller) ([]Ticket, error)) *batcher {
	return &batcher{run: run, timeout: time.Minute}
}

func callUsers(calls []Caller) []string {
	users := make([]string, len(calls))
	for i, c := range calls {
		users[i] = c.User
	}
	return users
}

func TestBatcherGathersCallsWhileOneIsInFlight(t *testing.T) {
	r := newBlockingRun()
	b := newBatcher(r.run)
	ctx := context.Background()

	first := make(chan Ticket)
	go func() {
		tk, err := b.do(ctx, Caller{User: "first"})
		if err != nil {
			t.Error(err)
		}
		first <- tk
	}()
	if got := <-r.batches; len(got) != 1 || got[0] != "first" {
		t.Fatalf("first batch %v", got)
	}

	// While it is in flight, ten more callers arrive.
	var wg sync.WaitGroup
	results := make([]Ticket, 10)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tk, err := b.do(ctx, Caller{User: fmt.Sprintf("u%d", i)})
			if err != nil {
				t.Error(err)
			}
			results[i] = tk
		}()
	}
	waitPending(t, b, 10)
	r.release <- nil
	<-first

	second := <-r.batches
	if len(second) != 10 {
		t.Fatalf("second batch has %d users, want all 10 waiting: %v", len(second), second)
	}
	r.release <- nil
	wg.Wait()
	// Each caller got the ticket of its own place in the batch.
	for i, tk := range results {
		want := int64(-1)
		for j, u := range second {
			if u == fmt.Sprintf("u%d", i) {
				want = int64(j + 1)
			}
		}
		if tk.Position != want {
			t.Fatalf("u%d got position %d, want %d", i, tk.Position, want)
		}
	}
}

func TestBatcherDropsCallsWhoseCallerGaveUp(t *testing.T) {
	r := newBlockingRun()
	b := newBatcher(r.run)
	go b.do(context.Background(), Caller{User: "in-flight"})
	<-r.batches

	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() {
		_, err := b.do(ctx, Caller{User: "gave-up"})
		gaveUp <- err
	}()
	waitPending(t, b, 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("gave-up: %v", err)
	}
	stays := make(chan error)
	go func() {
		_, err := b.do(context.Background(), Caller{User: "stays"})
		stays <- err
	}()
	waitPending(t, b, 2)

	r.release <- nil
	if got := <-r.batches; len(got) != 1 || got[0] != "stays" {
		t.Fatalf("next batch %v, want only the caller still waiting", got)
	}
	r.release <- nil
	if err := <-stays; err != nil {
		t.Fatal(err)
	}
}

func TestBatcherErrorReachesEveryCaller(t *testing.T) {
	r := newBlockingRun()
	b := newBatcher(r.run)
	go b.do(context.Background(), Caller{User: "in-flight"})
	<-r.batches

	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := b.do(context.Background(), Caller{User: fmt.Sprintf("u%d", i)})
			errs <- err
		}()
	}
	waitPending(t, b, 3)
	r.release <- nil
	<-r.batches
	boom := errors.New("redis went away")
	r.release <- boom
	for i := 0; i < 3; i++ {
		if err := <-errs; !errors.Is(err, boom) {
			t.Fatalf("caller got %v, want the batch's error", err)
		}
	}
}

func TestBatcherRefusesBeyondMaxPending(t *testing.T) {
	b := newBatcher(func(context.Context, []Caller) ([]Ticket, error) { return nil, nil })
	b.running = true // as if a batch were in flight: nothing drains
	for i := 0; i < maxPending; i++ {
		b.pending = append(b.pending, &batchCall{caller: Caller{User: "x"}, done: make(chan struct{})})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if _, err := b.do(ctx, Caller{User: "one-too-many"}); !errors.Is(err, ErrOverloaded) {
		t.Fatalf("got %v, want ErrOverloaded", err)
	}
}

func TestBatcherEndsCallsAtTheirDeadline(t *testing.T) {
	r := newBlockingRun()
	b := &batcher{run: r.run, timeout: 50 * time.Millisecond}
	ctx := context.Background()
	type outcome struct {
		user string
		err  error
	}
	out := make(chan outcome, 2)
	call := func(user string) {
		_, err := b.do(ctx, Caller{User: user})
		out <- outcome{user, err}
	}
	go call("in-flight")
	<-r.batches // Redis stalls on this batch: it is never released in time
	go call("pending")
	// Both end by their deadline, the one in flight and the one behind it.
	for range 2 {
		select {
		case o := <-out:
			if !errors.Is(o.err, ErrTimeout) || !errors.Is(o.err, context.DeadlineExceeded) {
				t.Fatalf("%s: got %v, want ErrTimeout", o.user, o.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a call outlived its deadline by 10 s")
		}
	}
	// Redis answers at last: the timed-out call is not sent again, and a
	// new call goes through.
	r.release <- nil
	go call("later")
	if got := <-r.batches; len(got) != 1 || got[0] != "later" {
		t.Fatalf("next batch %v, want only the new call", got)
	}
	r.release <- nil
	if o := <-out; o.err != nil {
		t.Fatalf("%s: %v", o.user, o.err)
	}
}

// TestBatcherDeadlinesUnderConcurrency has many callers race batches that
// are sometimes slower than the callers' deadline: every call must end,
// with its own ticket or ErrTimeout, and none may be answered twice (a
// second close of its channel would panic).
func TestBatcherDeadlinesUnderConcurrency(t *testing.T) {
	var batches atomic.Int64
	b := &batcher{timeout: 100 * time.Millisecond, run: func(_ context.Context, calls []Caller) ([]Ticket, error) {
		users := callUsers(calls)
		// Every third batch stalls past the deadline.
		if batches.Add(1)%3 == 0 {
			time.Sleep(200 * time.Millisecond)
		}
		tickets := make([]Ticket, len(users))
		for i, u := range users {
			tickets[i] = Ticket{Status: Waiting, Position: int64(len(u))}
		}
		return tickets, nil
	}}
	var wg sync.WaitGroup
	var answered, timedOut atomic.Int64
	// 50 callers make 20 calls each, one after the other, so that calls
	// arrive throughout, while batches run and while they stall.
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				user := strings.Repeat("u", 1+(i+j)%7)
				tk, err := b.do(context.Background(), Caller{User: user})
				switch {
				case err == nil && tk.Position == int64(len(user)):
					answered.Add(1)
				case errors.Is(err, ErrTimeout):
					timedOut.Add(1)
				default:
					t.Errorf("%s: ticket %+v, error %v", user, tk, err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("calls still waiting after 30 s")
	}
	t.Logf("%d answered, %d timed out, %d batches", answered.Load(), timedOut.Load(), batches.Load())
	if answered.Load() == 0 || timedOut.Load() == 0 {
		t.Fatal("want both answered and timed-out calls")
	}
}

// waitPending waits until n calls wait for the next batch.
func waitPending(t *testing.T, b *batcher, n int) {
	t.Helper()
	wait.For(t, 30*time.Second, fmt.Sprintf("%d calls pending", n), func() (bool, string) {
		b.mu.Lock()
		got := len(b.pending)
		b.mu.Unlock()
		return got == n, fmt.Sprintf("%d pending", got)
	})
}
