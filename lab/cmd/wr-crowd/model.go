package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/netclass"
)

// way is one of the three runs: the networks file or none, and the
// queue's human_check.
type way struct {
	name     string
	table    *netclass.Table // nil: no networks file
	escalate bool            // human_check: escalate, the provider answering
}

// ways are the three runs, the file parsed from networksFile.
func ways() ([]way, error) {
	table, err := netclass.Parse(strings.NewReader(networksFile), "networks.txt")
	if err != nil {
		return nil, err
	}
	return []way{
		{name: "1. no networks file"},
		{name: "2. networks file (carriers shared, data centre hosting)", table: table},
		{name: "3. networks file + human_check: escalate", table: table, escalate: true},
	}, nil
}

// modelConfig is what a run of the model takes.
type modelConfig struct {
	scale       float64
	seed        uint64
	workers     int
	bits        int     // the price's base (WAITROOM_POW_NETWORK_BITS)
	calm        float64 // calm arrivals a second, at scale 1
	maxAttempts int     // asks a place may take before the model gives up on it
	queuePrefix string  // queues are named prefix-1, -2, -3
	shape       shape   // the opening at scale 1 (fullShape, or a variant)
}

// placeOutcome is what one place cost its caller.
type placeOutcome struct {
	hashes   float64 // expected hashes of the proofs it solved (2^d each)
	maxBits  int     // the highest difficulty it was asked
	human    int     // human checks it passed
	asks     int     // enters it made (1, or more when the price rose between its challenge and its enter)
	paidBits int     // the difficulty of the proof its place was made with (-1: a human check instead)
	got      bool    // it holds a place
	seq      int64   // its arrival number
	sent     int64   // the model's clock before its last enter was sent
	ack      int64   // and after its answer
}

// ask is one challenge answered: the places the caller's network held
// then (as the model counted them: acknowledged places) and the bits.
type ask struct {
	held, bits int
}

// wayResult is one way's measurements.
type wayResult struct {
	way      way
	agents   []agent
	out      []placeOutcome
	networks [kinds]int
	asks     []ask // anonymous callers' challenges (PriceByNetwork)
	elapsed  time.Duration
	arrivals float64 // places made a second, over the run
	calm     float64 // the calm arrivals of this run (scaled)
	// fifo: people holding a place, breaks of the arrival order among
	// them (one whose enter was answered before another's was sent, yet
	// stands behind it), and people not waiting at the end.
	fifoPeople, fifoBreaks, notWaiting int
}

// runWay runs the opening once: every place asks its challenge, pays it
// (or passes the human check) and enters, workers at a time, in arrival
// order; then every person's position is read back.
func runWay(ctx context.Context, rdb *redis.Client, cfg modelConfig, w way, idx int) (*wayResult, error) {
	agents, networks := population(cfg.shape, cfg.scale, cfg.seed)
	calm := cfg.calm * cfg.scale
	q := fmt.Sprintf("%s-%d", cfg.queuePrefix, idx)
	settings := queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour,
		Price: queue.Price{Bits: cfg.bits, CalmArrivals: calm}}
	var opts []queue.Option
	if w.escalate {
		opts = append(opts, queue.WithHumanCheck(func() bool { return true }))
	}
	s, err := queue.NewStore(rdb, []string{q}, settings, 10*time.Second, opts...)
	if err != nil {
		return nil, err
	}
	if w.escalate {
		mode := queue.HumanEscalate
		if err := queue.NewInspector(s).UpdateSettings(ctx, q, queue.Update{HumanCheck: &mode}); err != nil {
			return nil, err
		}
	}
	// The opener takes the interval's token, so every arrival waits.
	if _, err := s.Enter(ctx, q, queue.Entry{Caller: queue.Caller{User: "opener"}}); err != nil {
		return nil, err
	}

	res := &wayResult{way: w, agents: agents, out: make([]placeOutcome, len(agents)), networks: networks, calm: calm}
	m := &model{s: s, q: q, table: w.table, maxAttempts: cfg.maxAttempts, held: map[string]int{}}
	start := time.Now()
	asks, err := m.each(ctx, cfg.workers, len(agents), func(i int) (*ask, error) {
		return m.place(ctx, agents[i], &res.out[i])
	})
	if err != nil {
		return nil, err
	}
	res.elapsed = time.Since(start)
	res.asks = asks
	made := 0
	for _, o := range res.out {
		if o.got {
			made++
		}
	}
	res.arrivals = float64(made) / res.elapsed.Seconds()
	if err := m.fifo(ctx, cfg.workers, res); err != nil {
		return nil, err
	}
	return res, nil
}

// model is one way's store and the counts the workers share.
type model struct {
	s           *queue.Store
	q           string
	table       *netclass.Table
	maxAttempts int
	clock       atomic.Int64 // a logical clock: before and after each enter
	proofs      atomic.Int64
	mu          sync.Mutex
	held        map[string]int // a network's acknowledged places (anonymous callers)
}

// each runs f(0…n-1) in order on workers goroutines, gathering the asks
// f records.
func (m *model) each(ctx context.Context, workers, n int, f func(i int) (*ask, error)) ([]ask, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		all  []ask
		errs []error
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []ask
			for i := range next {
				if ctx.Err() != nil {
					continue // another call failed: drain
				}
				a, err := f(i)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
					continue
				}
				if a != nil {
					mine = append(mine, *a)
				}
			}
			mu.Lock()
			all = append(all, mine...)
			mu.Unlock()
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return all, ctx.Err()
}

// caller builds a's Caller exactly as the service does: its tiers by the
// networks file's one rule (a shared network per address), the ceiling
// for a hosting network, no price for a signed-in member.
func (m *model) caller(a agent) queue.Caller {
	tiers, class := m.table.Tiers(a.addr)
	c := queue.Caller{User: a.user, Client: tiers.Host, Networks: [2]string{tiers.Network, tiers.Site}}
	if class == netclass.Hosting {
		c.Pricing = queue.PriceCeiling
	}
	if a.kind == member {
		c.Pricing = queue.PriceNone
	}
	return c
}

// place is one place asked for: challenge, pay what it asks (a proof of
// exactly that difficulty, or a human check), enter; again when the price
// rose in between. It returns the first challenge's ask for the curve
// (nil for a member or a hosting caller, whose price is not their
// network's).
func (m *model) place(ctx context.Context, a agent, o *placeOutcome) (*ask, error) {
	c := m.caller(a)
	var first *ask
	byNetwork := c.Pricing == queue.PriceByNetwork
	for range m.maxAttempts {
		d := 0
		if !c.Human { // one who passed the check enters with its token, no challenge
			m.mu.Lock()
			held := m.held[c.Networks[0]]
			m.mu.Unlock()
			var err error
			d, err = m.s.Challenge(ctx, m.q, c)
			switch {
			case errors.Is(err, queue.ErrHumanCheckRequired):
				o.human++
				c.Human = true // the stand-in passes every person, and a farm buys one
				continue
			case err != nil:
				return nil, fmt.Errorf("%s: challenge: %w", a.user, err)
			}
			if first == nil && byNetwork {
				first = &ask{held: held, bits: d}
			}
		}
		o.maxBits = max(o.maxBits, d)
		c.Proof = queue.Proof{}
		if d > 0 {
			o.hashes += math.Ldexp(1, d)
			c.Proof = queue.Proof{ID: fmt.Sprintf("%s-%d", m.q, m.proofs.Add(1)), Difficulty: d, Expires: time.Now().Add(time.Hour)}
		}
		o.asks++
		o.sent = m.clock.Add(1)
		t, err := m.s.Enter(ctx, m.q, queue.Entry{Caller: c})
		o.ack = m.clock.Add(1)
		var ce *queue.ChallengeError
		switch {
		case errors.As(err, &ce):
			continue // the network's price rose since the challenge: ask again
		case errors.Is(err, queue.ErrHumanCheckRequired):
			o.human++
			c.Human = true
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: enter: %w", a.user, err)
		case t.Status != queue.Waiting:
			return nil, fmt.Errorf("%s: enter answered %s, want %s", a.user, t.Status, queue.Waiting)
		}
		o.got, o.seq, o.paidBits = true, t.Seq, d
		if c.Human {
			o.paidBits = -1
		}
		if byNetwork {
			m.mu.Lock()
			m.held[c.Networks[0]]++
			m.mu.Unlock()
		}
		return first, nil
	}
	return first, nil // gave up: o.got stays false
}

// fifo reads every person's position and checks that the line holds
// people in the order they entered: positions follow arrival numbers,
// and nobody whose enter was answered before another person's was sent
// stands behind that person.
func (m *model) fifo(ctx context.Context, workers int, res *wayResult) error {
	var people []int
	for i, a := range res.agents {
		if a.kind.person() && res.out[i].got {
			people = append(people, i)
		}
	}
	pos := make([]int64, len(res.agents))
	var notWaiting atomic.Int64
	if _, err := m.each(ctx, workers, len(people), func(j int) (*ask, error) {
		i := people[j]
		t, err := m.s.Status(ctx, m.q, queue.Caller{User: res.agents[i].user})
		if err != nil {
			return nil, err
		}
		if t.Status != queue.Waiting {
			notWaiting.Add(1)
		}
		pos[i] = t.Position
		return nil, nil
	}); err != nil {
		return err
	}
	slices.SortFunc(people, func(a, b int) int { return int(pos[a] - pos[b]) })
	breaks := 0
	var maxSent, lastSeq int64
	for j, i := range people {
		o := res.out[i]
		if j > 0 && (pos[i] == pos[people[j-1]] || o.seq < lastSeq) {
			breaks++ // two people at one position, or positions against arrival numbers
		}
		if o.ack < maxSent {
			breaks++ // answered before someone ahead of it was even sent
		}
		maxSent, lastSeq = max(maxSent, o.sent), o.seq
	}
	res.fifoPeople, res.fifoBreaks, res.notWaiting = len(people), breaks, int(notWaiting.Load())
	return nil
}
