package queue

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// shortLog records what ReplicaWait.Short hears.
type shortLog struct {
	mu            sync.Mutex
	queue         string
	calls, acked  int
	batches       int
	unexpectedAck bool
}

func (l *shortLog) short(queue string, acked, calls int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queue, l.batches, l.calls = queue, l.batches+1, l.calls+calls
	if acked != 0 {
		l.unexpectedAck = true
	}
}

// With no replica to acknowledge, an enter under WAIT 1 is answered as
// usual after the WAIT timeout: a missing replica never takes the room
// down. Every such enter is counted and reported.
func TestReplicaWaitShortfallAnswersAsUsual(t *testing.T) {
	t.Parallel()
	var log shortLog
	s, q, _ := newStore(t, Settings{RefillSize: 2, RefillInterval: time.Hour, SessionTTL: time.Hour},
		WithReplicaWait(ReplicaWait{Replicas: 1, Timeout: 20 * time.Millisecond, Short: log.short}))
	ctx := context.Background()
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: fmt.Sprintf("u%d", i)}})
			if err == nil && tk.Status != Entered && tk.Status != Waiting {
				err = fmt.Errorf("u%d: %s", i, tk.Status)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	info, err := s.Info(ctx, q)
	if err != nil || info.Waiting+info.Entered != n {
		t.Fatalf("info %+v %v, want %d places", info, err, n)
	}
	if got := s.ReplicaWaitShortfalls(); got != n {
		t.Errorf("shortfalls %d, want %d", got, n)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.queue != q || log.calls != n || log.batches < 1 || log.unexpectedAck {
		t.Errorf("Short heard %d calls in %d batches of %q (acknowledged: %v), want %d calls of %s, none acknowledged",
			log.calls, log.batches, log.queue, log.unexpectedAck, n, q)
	}
	t.Logf("%d enters in %d batches under WAIT 1 with no replica", n, log.batches)
}

// Off, nothing waits and nothing is counted; the status script is never
// followed by a WAIT either way.
func TestReplicaWaitOff(t *testing.T) {
	t.Parallel()
	s, q, _ := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, WithReplicaWait(ReplicaWait{}))
	ctx := context.Background()
	for _, u := range []string{"a", "b"} {
		if _, err := s.Enter(ctx, q, Entry{Caller: Caller{User: u}}); err != nil {
			t.Fatal(err)
		}
	}
	if tk, err := s.Status(ctx, q, Caller{User: "b"}); err != nil || tk.Position != 1 {
		t.Fatalf("status %+v %v", tk, err)
	}
	if got := s.ReplicaWaitShortfalls(); got != 0 {
		t.Errorf("shortfalls %d with WAIT off", got)
	}
}

// On a cluster client the pipeline goes to the primary of the queue's
// slot (a key-less WAIT would go to any node), and a script the node does
// does not have yet is loaded there (a primary after a failover).
func TestReplicaWaitOnClusterClient(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewClusterNode(t)
	ctx := context.Background()
	s, err := NewStore(rdb, []string{"wait-a", "wait-b"}, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 5*time.Second,
		WithReplicaWait(ReplicaWait{Replicas: 1, Timeout: 5 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"wait-a", "wait-b"} {
		for i, u := range []string{"a", "b", "c"} {
			tk, err := s.Enter(ctx, q, Entry{Caller: Caller{User: u}})
			if err != nil {
				t.Fatalf("%s %s: %v", q, u, err)
			}
			if want := map[bool]Status{true: Entered, false: Waiting}[i == 0]; tk.Status != want || (i > 0 && tk.Position != int64(i)) {
				t.Fatalf("%s %s: %+v, want %s", q, u, tk, want)
			}
		}
	}
	if got := s.ReplicaWaitShortfalls(); got != 6 {
		t.Errorf("shortfalls %d, want 6 (a one-node cluster has no replica)", got)
	}
}

func TestWithReplicaWaitRefuses(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	for _, w := range []ReplicaWait{
		{Replicas: -1},
		{Replicas: 1}, // no timeout: WAIT 0 blocks for ever
		{Replicas: 1, Timeout: 500 * time.Microsecond}, // WAIT counts whole ms
		{Replicas: 1, Timeout: 5 * time.Second},        // not below the store's timeout
		{Replicas: 1, Timeout: 10 * time.Second},       // far above it
	} {
		s, err := NewStore(rdb, []string{"refused"}, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 5*time.Second,
			WithReplicaWait(w))
		if err == nil || s != nil {
			t.Errorf("%+v accepted", w)
		}
	}
}

// dropReplicaHook closes the fake replica's link right after the enter
// batch's script and WAIT, once armed: the switchover's moment, when the
// promoted replica leaves the old primary without the script's writes.
type dropReplicaHook struct {
	armed atomic.Bool
	drop  func(ctx context.Context)
}

func (h *dropReplicaHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *dropReplicaHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *dropReplicaHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if cmds[len(cmds)-1].Name() == "wait" && h.armed.CompareAndSwap(true, false) {
			h.drop(ctx)
		}
		return err
	}
}

// A primary fenced with min-replicas-to-write whose replica leaves between
// an enter's script and the answer (a switchover: the promoted replica
// never got the writes) fails the enter with NOREPLICAS, an unknown
// outcome, instead of acknowledging a place the failover will discard.
// While the replica is there but slow, enters are answered as usual. So
// are leave and done.
func TestReplicaWaitFencedPrimaryRefuses(t *testing.T) {
	t.Parallel()
	c := redistest.NewContainer(t)
	rdb := c.Client(t, &redis.Options{MaxRetries: -1})
	ctx := context.Background()
	for k, v := range map[string]string{"min-replicas-to-write": "1", "min-replicas-max-lag": "60", "repl-diskless-sync": "no"} {
		if err := rdb.ConfigSet(ctx, k, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addr, err := c.Addr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	goodReplicas := func(want string) {
		t.Helper()
		wait.For(t, 20*time.Second, "the primary to count "+want+" good replicas", func() (bool, string) {
			info, err := rdb.Info(ctx, "replication").Result()
			if err != nil {
				return false, err.Error()
			}
			return strings.Contains(info, "min_slaves_good_slaves:"+want+"\r\n"), info
		})
	}
	// The replica: a connection that asked for SYNC and never acknowledges
	// anything, so every WAIT falls short while the primary counts it as
	// in sync for a minute.
	var replica net.Conn
	connect := func() {
		t.Helper()
		if replica, err = net.Dial("tcp", addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { replica.Close() })
		go io.Copy(io.Discard, replica) // the RDB and the stream, unread
		if _, err := replica.Write([]byte("SYNC\r\n")); err != nil {
			t.Fatal(err)
		}
		goodReplicas("1")
	}
	connect()

	hook := &dropReplicaHook{drop: func(context.Context) {
		replica.Close()
		goodReplicas("0")
	}}
	rdb.AddHook(hook)
	s, err := NewStore(rdb, []string{"fenced"}, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 5*time.Second,
		WithReplicaWait(ReplicaWait{Replicas: 1, Timeout: 20 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	// Slow replica: answered, counted.
	if tk, err := s.Enter(ctx, "fenced", Entry{Caller: Caller{User: "a"}}); err != nil || tk.Status != Entered {
		t.Fatalf("enter with a slow replica: %+v, %v; want ENTERED", tk, err)
	}
	if got := s.ReplicaWaitShortfalls(); got != 1 {
		t.Fatalf("shortfalls %d, want 1", got)
	}
	// The replica leaves after the script ran: NOREPLICAS, not counted as
	// answered.
	hook.armed.Store(true)
	_, err = s.Enter(ctx, "fenced", Entry{Caller: Caller{User: "b"}})
	if !redis.HasErrorPrefix(err, "NOREPLICAS") {
		t.Fatalf("enter as the replica left: %v, want a NOREPLICAS error", err)
	}
	if got := s.ReplicaWaitShortfalls(); got != 1 {
		t.Errorf("shortfalls %d, want still 1", got)
	}
	// The script did run on the old primary (its place is there, and
	// would be discarded by the failover): the refusal is about the answer.
	if n, err := rdb.ZCard(ctx, keysFor("fenced").waiting).Result(); err != nil || n != 1 {
		t.Errorf("waiting %d, %v; want b's place on the old primary", n, err)
	}
	// From now on the primary refuses the script itself.
	if _, err := s.Enter(ctx, "fenced", Entry{Caller: Caller{User: "c"}}); !redis.HasErrorPrefix(err, "NOREPLICAS") {
		t.Errorf("enter with no replica: %v, want a NOREPLICAS error", err)
	}

	// Leave and done wait the same way: answered with a slow replica,
	// refused when it leaves in the act (a leave undone by the failover
	// would leave a place nobody holds).
	connect()
	if err := s.Leave(ctx, "fenced", Caller{User: "b"}); err != nil {
		t.Fatalf("leave with a slow replica: %v", err)
	}
	for name, call := range map[string]func() error{
		"leave": func() error { return s.Leave(ctx, "fenced", Caller{User: "a"}) },
		"done": func() error {
			_, err := s.Done(ctx, "fenced", "a", time.UnixMilli(1))
			return err
		},
	} {
		hook.armed.Store(true)
		if err := call(); !redis.HasErrorPrefix(err, "NOREPLICAS") {
			t.Errorf("%s as the replica left: %v, want a NOREPLICAS error", name, err)
		}
		connect()
	}
	if got := s.ReplicaWaitShortfalls(); got != 1 {
		t.Errorf("shortfalls %d, want still 1: leave and done hold no place", got)
	}
}
