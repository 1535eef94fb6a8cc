// Package webhook tells the site what happened in its queues: signed HTTP
// POSTs of the events admitted, done, left, abandoned, expired and
// settings_changed, delivered at least once.
//
// The queue scripts write each event, inside the script that causes it,
// to one of the queue's two outboxes, Redis STREAMs (rediskeys.Events, and
// rediskeys.BulkEvents for a user's own leaving, which anyone can repeat at
// will: outbox.go), while the queue's config holds webhooks = 1. This
// package owns that flag (set while the queue has a webhook URL) and
// delivers the outboxes: on every replica, one worker per queue reads new
// entries of both through the consumer group "webhook" (XREADGROUP, the
// events outbox's sent first), POSTs each (up to Parallel at once), and
// acknowledges it (XACK) after a 2xx only. The workers' reads block: they
// run on a Redis client of their own (Options.Conns). An entry not
// acknowledged stays pending in the group; any replica's worker takes it
// again (XPENDING, then XCLAIM, which only one can win) once it has been
// idle for its backoff: a failed delivery, or a replica that died
// mid-delivery, is retried by whichever replica is up. (XAUTOCLAIM would
// take every entry idle for one fixed time, which allows no backoff that
// grows with the attempts.) The oldest pending entries are looked at
// first, so after a long outage the newer ones follow once the older are
// delivered: within MaxBackoff of the receiver's recovery.
// The backoff doubles from MinBackoff up to MaxBackoff, never less than
// the delivery timeout (so a delivery in flight is never taken from a live
// worker); an entry still undelivered GiveUpAfter after it was written is
// dead-lettered: copied to a STREAM of its own (rediskeys.DeadEvents, bounded), counted,
// and acknowledged. Delivered entries are trimmed from the outboxes (XTRIM
// MINID up to the oldest pending one). A full outbox takes no more: the
// scripts drop the new events and count them, and the workers report the
// count (Observer.WebhookDropped).
//
// Each entry is one delivery: a JSON body {"events": [...]} of the events
// of one script call (up to 100 users), each with its own id, stable
// across retries, so a receiver drops duplicates by id.
//
// The secret signs every body (sign.go) and is never logged; URLs are
// logged by host only (a query may carry the receiver's token).
package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
)

// Group is the consumer group of every queue's outbox.
const Group = "webhook"

// DeadMax bounds each queue's dead letters (MAXLEN ~).
const DeadMax = 10000

// Results of a delivery attempt, the metric's result label.
const (
	ResultDelivered  = "delivered"   // a 2xx: acknowledged
	ResultRetry      = "retry"       // failed; pending, tried again after its backoff
	ResultDeadLetter = "dead_letter" // failed for GiveUpAfter: kept in rediskeys.DeadEvents, acknowledged
)

// Workers deliver the outboxes of a set of queues.
type Workers struct {
	rdb  Redis
	opts Options
	// refused is, per queue, the stored webhook_url last refused, so it
	// is warned of once.
	refused sync.Map
}

// New checks opts and returns workers; Start runs them. rdb is the
// workers' own client, opts.Conns() connections (redisconn.NewBlocking),
// not the request path's: their reads block.
func New(rdb Redis, opts Options) (*Workers, error) {
	if len(opts.Secret) < MinSecretBytes {
		return nil, fmt.Errorf("webhook: the secret must be at least %d bytes", MinSecretBytes)
	}
	if opts.URL != "" {
		if err := CheckURL(opts.URL, opts.InsecureHTTP); err != nil {
			return nil, fmt.Errorf("webhook: URL %w", err)
		}
	}
	if len(opts.Queues) == 0 {
		return nil, errors.New("webhook: no queues")
	}
	if opts.Outbox == nil {
		return nil, errors.New("webhook: no outbox (the queue store)")
	}
	opts.defaults()
	return &Workers{rdb: rdb, opts: opts}, nil
}

// Start runs one worker per queue until ctx ends or stop is called; stop
// returns once every worker has. A delivery in flight when they stop is
// abandoned unacknowledged: another replica (or the next start) sends it.
func (w *Workers) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, q := range w.opts.Queues {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.serve(ctx, q)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// serve is one queue's worker.
func (w *Workers) serve(ctx context.Context, q string) {
	var (
		target            string
		refreshAt, trimAt time.Time
		failures          int
		events, bulk      = outboxes(q)
		log               = w.opts.Log.With("queue", q)
		warnedAt          time.Time
	)
	for ctx.Err() == nil {
		now := time.Now()
		var err error
		if !now.Before(refreshAt) {
			if target, err = w.refresh(ctx, q, target); err == nil {
				refreshAt = now.Add(w.opts.Refresh)
			}
		}
		if err == nil && target == "" {
			sleep(ctx, w.opts.Refresh)
			continue
		}
		if err == nil {
			err = w.retry(ctx, q, target, events)
		}
		if err == nil {
			err = w.retry(ctx, q, target, bulk)
		}
		if err == nil {
			err = w.readNew(ctx, q, target, events, bulk)
		}
		if err == nil && !now.Before(trimAt) {
			if err = w.trim(ctx, q); err == nil {
				trimAt = now.Add(w.opts.Trim)
			}
		}
		if err != nil && ctx.Err() == nil {
			// Redis unreachable (or the outbox gone, after a flush: the
			// next refresh makes the group again). Back off, and say so
			// at most once a minute.
			failures++
			if time.Since(warnedAt) > time.Minute {
				log.Warn("webhook: outbox unavailable", "stream", events.key, "err", err)
				warnedAt = time.Now()
			}
			refreshAt, target = time.Time{}, "" // refresh, and make the group again if need be
			sleep(ctx, min(time.Duration(failures)*time.Second, 10*time.Second))
			continue
		}
		failures = 0
	}
}

// refresh reads queue q's webhook URL (its own, else the default), makes
// the consumer group, and asks the queue to write its events while there
// is a URL, and not when there is none. The group is made before the flag
// so that no event is written before it could be read. An invalid stored
// URL (one set before the rules tightened) counts as none, with a warning.
func (w *Workers) refresh(ctx context.Context, q, was string) (string, error) {
	cfg := rediskeys.Config(q)
	own, err := w.rdb.HGet(ctx, cfg, "webhook_url").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return was, err
	}
	target := w.opts.URL
	if own != "" {
		if err := CheckURL(own, w.opts.InsecureHTTP); err != nil {
			if last, _ := w.refused.Swap(q, own); last != own {
				w.opts.Log.Warn("webhook: the queue's webhook_url is refused; using the default", "queue", q, "err", err)
			}
		} else {
			target = own
		}
	}
	if target != "" && was == "" { // at start, when turned on, and after an error (serve)
		for _, key := range []string{rediskeys.Events(q), rediskeys.BulkEvents(q)} {
			err := w.rdb.XGroupCreateMkStream(ctx, key, Group, "0").Err()
			if err != nil && !redis.HasErrorPrefix(err, "BUSYGROUP") {
				return was, err
			}
		}
	}
	if err := w.opts.Outbox.SetOutbox(ctx, q, target != "", w.opts.BulkMax); err != nil {
		return was, err
	}
	if target != was {
		w.opts.Log.Info("webhook: events of the queue go to", "queue", q, "host", hostOf(target))
	}
	return target, nil
}

// readNew delivers the entries no worker has read yet, blocking up to
// Poll for some to come in either outbox. One read takes from both, a few
// of each: the events outbox's are sent first, and a bulk backlog only
// ever holds them back by the bulk deliveries already in flight.
func (w *Workers) readNew(ctx context.Context, q, target string, events, bulk outbox) error {
	res, err := w.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: Group, Consumer: w.opts.Consumer,
		Streams: []string{events.key, bulk.key, ">", ">"},
		// No more than can be in flight at once (half from each
		// outbox): an entry read waits for no other delivery, so it is
		// never idle for its backoff while this worker holds it (see
		// backoff).
		Count: int64(max(w.opts.Parallel/2, 1)), Block: w.opts.Poll,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return err
	}
	var msgs []boxed
	for _, box := range []outbox{events, bulk} { // events first
		for _, s := range res {
			if s.Stream != box.key {
				continue
			}
			for _, m := range s.Messages {
				msgs = append(msgs, boxed{box, m})
			}
		}
	}
	return w.deliverAll(ctx, q, target, msgs)
}

// boxed is an entry read from an outbox.
type boxed struct {
	box outbox
	m   redis.XMessage
}

// deliverAll delivers msgs, up to Parallel at once, so that a slow
// receiver does not hold the outbox to one delivery per round trip; it
// returns once all are settled, with the first Redis error.
func (w *Workers) deliverAll(ctx context.Context, q, target string, msgs []boxed) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		// A read of both outboxes at Parallel 1 holds two: none waits.
		slots = make(chan struct{}, max(w.opts.Parallel, len(msgs)))
	)
	for _, e := range msgs {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := w.deliver(ctx, q, target, e.box, e.m); err != nil {
				mu.Lock()
				first = cmp.Or(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// backoff is how long an entry delivered n times waits before the next
// try: doubling from MinBackoff, at most MaxBackoff, and never less than
// a delivery may take (plus a second), so that no worker takes an entry
// another is still delivering.
func (w *Workers) backoff(n int64) time.Duration {
	d := w.opts.MaxBackoff
	if n >= 1 && n < 40 {
		d = min(w.opts.MinBackoff<<(n-1), w.opts.MaxBackoff)
	}
	return max(d, w.opts.Timeout+time.Second)
}

// retry takes again the pending entries (this replica's and any other's)
// whose backoff has passed, up to Parallel, and delivers them. XCLAIM with
// that idle time as its minimum lets one worker only take each.
func (w *Workers) retry(ctx context.Context, q, target string, box outbox) error {
	pending, err := w.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{
		Stream: box.key, Group: Group, Idle: w.backoff(1), Start: "-", End: "+", Count: 64,
	}).Result()
	if err != nil {
		return err
	}
	var due []boxed
	for _, p := range pending {
		if len(due) >= w.opts.Parallel {
			break // as many as go at once (readNew); the rest next time
		}
		wait := w.backoff(p.RetryCount)
		if p.Idle < wait {
			continue
		}
		msgs, err := w.rdb.XClaim(ctx, &redis.XClaimArgs{
			Stream: box.key, Group: Group, Consumer: w.opts.Consumer, MinIdle: wait, Messages: []string{p.ID},
		}).Result()
		if err != nil {
			return err
		}
		for _, m := range msgs {
			due = append(due, boxed{box, m})
		}
	}
	return w.deliverAll(ctx, q, target, due)
}

// deliver POSTs entry m and settles it: acknowledged after a 2xx,
// dead-lettered once too old, else left pending for a retry. Only a Redis
// error is returned; a failed POST is a result.
func (w *Workers) deliver(ctx context.Context, q, target string, box outbox, m redis.XMessage) error {
	events := box.key
	body, err := encode(q, box.idPrefix, m)
	ok := false
	if err == nil {
		ok = w.post(ctx, q, target, body)
	} else {
		w.opts.Log.Error("webhook: an outbox entry that cannot be read", "queue", q, "entry", m.ID, "err", err)
	}
	if ctx.Err() != nil {
		return nil // stopping: left pending for another worker
	}
	switch {
	case ok:
		w.opts.Observer.WebhookDelivered(q, ResultDelivered)
		return w.rdb.XAck(ctx, events, Group, m.ID).Err()
	case err == nil && time.Since(entryTime(m.ID)) < w.opts.GiveUpAfter:
		w.opts.Observer.WebhookDelivered(q, ResultRetry)
		return nil
	}
	values := map[string]any{"entry": m.ID}
	if box.bulk {
		values["outbox"] = "bulk"
	}
	for k, v := range m.Values {
		values[k] = v
	}
	if err := w.rdb.XAdd(ctx, &redis.XAddArgs{Stream: rediskeys.DeadEvents(q), MaxLen: DeadMax, Approx: true, Values: values}).Err(); err != nil {
		return err
	}
	w.opts.Observer.WebhookDelivered(q, ResultDeadLetter)
	w.opts.Log.Warn("webhook: delivery given up, kept as a dead letter", "queue", q, "entry", m.ID, "dead", rediskeys.DeadEvents(q))
	return w.rdb.XAck(ctx, events, Group, m.ID).Err()
}

// post sends one signed delivery; true on a 2xx.
func (w *Workers) post(ctx context.Context, q, target string, body []byte) bool {
	ctx, cancel := context.WithTimeout(ctx, w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "waitroom-webhook")
	req.Header.Set(SignatureHeader, Sign(w.opts.Secret, time.Now(), body))
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		w.opts.Log.Debug("webhook: delivery failed", "queue", q, "host", hostOf(target), "err", redactURL(err))
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		w.opts.Log.Debug("webhook: delivery refused", "queue", q, "host", hostOf(target), "status", resp.StatusCode)
		return false
	}
	return true
}

// trim drops from both outboxes the entries every delivery is done with
// (those before the oldest pending one, or up to the last one read when
// none is pending), and reports the backlog and the events the scripts
// dropped.
func (w *Workers) trim(ctx context.Context, q string) error {
	var entries int64
	var oldest time.Duration
	for _, key := range []string{rediskeys.Events(q), rediskeys.BulkEvents(q)} {
		n, age, err := w.trimOne(ctx, key)
		if err != nil {
			return err
		}
		entries, oldest = entries+n, max(oldest, age)
	}
	w.opts.Observer.WebhookBacklog(q, entries, oldest)
	drops, err := w.drops(ctx, q)
	if err != nil {
		return err
	}
	for reason, n := range drops {
		w.opts.Observer.WebhookDropped(q, reason, n)
		w.opts.Log.Warn("webhook: events dropped, their outbox full", "queue", q, "reason", reason, "events", n)
	}
	return nil
}

// trimOne trims one outbox; it returns its entries not yet acknowledged
// and the age of the oldest.
func (w *Workers) trimOne(ctx context.Context, events string) (int64, time.Duration, error) {
	groups, err := w.rdb.XInfoGroups(ctx, events).Result()
	if err != nil {
		return 0, 0, err
	}
	var g *redis.XInfoGroup
	for i := range groups {
		if groups[i].Name == Group {
			g = &groups[i]
		}
	}
	if g == nil {
		return 0, 0, nil
	}
	upTo, oldest := g.LastDeliveredID, time.Duration(0)
	if g.Pending > 0 {
		p, err := w.rdb.XPending(ctx, events, Group).Result()
		if err != nil {
			return 0, 0, err
		}
		upTo, oldest = p.Lower, time.Since(entryTime(p.Lower))
	} else if g.Lag != 0 {
		next, err := w.rdb.XRangeN(ctx, events, "("+g.LastDeliveredID, "+", 1).Result()
		if err != nil {
			return 0, 0, err
		}
		if len(next) > 0 {
			oldest = time.Since(entryTime(next[0].ID))
		}
	}
	if upTo != "" && upTo != "0-0" {
		if err := w.rdb.XTrimMinIDApprox(ctx, events, upTo, 0).Err(); err != nil {
			return 0, 0, err
		}
	}
	return g.Pending + max(g.Lag, 0), max(oldest, 0), nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// hostOf is what the logs say of a URL: its host, never its path or query.
func hostOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Host
	}
	return ""
}

// redactURL keeps a *url.Error's URL out of the log (its query may hold a
// token): the underlying error only.
func redactURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
