package webhook

// What the workers are given: a Redis client, the options, an observer.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// Observer hears deliveries and the outboxes' backlog (metrics).
type Observer interface {
	// WebhookDelivered counts one delivery attempt of queue by result.
	WebhookDelivered(queue, result string)
	// WebhookBacklog reports queue's entries not yet acknowledged and the
	// age of the oldest (0: none).
	WebhookBacklog(queue string, entries int64, oldest time.Duration)
	// WebhookDropped counts events of queue the scripts dropped from a
	// full outbox, by reason (DropReasons).
	WebhookDropped(queue, reason string, events int64)
}

type nopObserver struct{}

func (nopObserver) WebhookDelivered(string, string)             {}
func (nopObserver) WebhookBacklog(string, int64, time.Duration) {}
func (nopObserver) WebhookDropped(string, string, int64)        {}

// Redis is the part of a go-redis client the workers use; a single node,
// Sentinel and Cluster client all fit (every key of a queue is in its
// hash tag).
type Redis interface {
	redis.Scripter
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	HSet(ctx context.Context, key string, values ...any) *redis.IntCmd
	XAdd(ctx context.Context, a *redis.XAddArgs) *redis.StringCmd
	XRangeN(ctx context.Context, stream, start, stop string, count int64) *redis.XMessageSliceCmd
	XGroupCreateMkStream(ctx context.Context, stream, group, start string) *redis.StatusCmd
	XReadGroup(ctx context.Context, a *redis.XReadGroupArgs) *redis.XStreamSliceCmd
	XAck(ctx context.Context, stream, group string, ids ...string) *redis.IntCmd
	XPending(ctx context.Context, stream, group string) *redis.XPendingCmd
	XPendingExt(ctx context.Context, a *redis.XPendingExtArgs) *redis.XPendingExtCmd
	XClaim(ctx context.Context, a *redis.XClaimArgs) *redis.XMessageSliceCmd
	XTrimMinIDApprox(ctx context.Context, key string, minID string, limit int64) *redis.IntCmd
	XInfoGroups(ctx context.Context, key string) *redis.XInfoGroupsCmd
}

// Options configure the workers. Zero durations take the defaults.
type Options struct {
	Queues []string
	// Outbox is the queue's side of the outboxes (queue.Store): it turns a
	// queue's events on and hands over what its scripts dropped.
	Outbox Outbox
	// URL receives every queue's events unless the queue's webhook_url
	// overrides it (WAITROOM_WEBHOOK_URL); "" for none.
	URL string
	// Secret signs the bodies (WAITROOM_WEBHOOK_SECRET), MinSecretBytes
	// at least.
	Secret []byte
	// InsecureHTTP accepts plain http URLs anywhere (CheckURL).
	InsecureHTTP bool
	// Timeout bounds one delivery (default 10 s); Parallel is how many
	// deliveries of one queue a replica has in flight at once (default 4).
	Timeout  time.Duration
	Parallel int
	// MinBackoff and MaxBackoff bound the wait before a retry (default
	// 1 s and 10 min); GiveUpAfter is when an undelivered entry is
	// dead-lettered (default 1 h).
	MinBackoff, MaxBackoff, GiveUpAfter time.Duration
	// BulkMax caps each queue's bulk outbox, in entries (one user's own
	// leaving each): past it, the scripts drop new ones, counted
	// (DropBulkFull). Default 10,000, the scripts' own default.
	BulkMax int
	// Refresh is how often a worker reads its queue's webhook_url and
	// sets the webhooks flag (default 5 s); Poll, how long it blocks
	// waiting for new entries (default 1 s); Trim, how often it trims
	// delivered entries and reports the backlog (default 10 s).
	Refresh, Poll, Trim time.Duration
	// Consumer names this replica in the consumer groups (default: host
	// name and a random suffix).
	Consumer string
	// Client sends the deliveries (default: a client bounded by Timeout
	// that refuses link-local addresses and redirects).
	Client   *http.Client
	Observer Observer
	Log      *slog.Logger
}

const defaultParallel = 4

// Conns is how many connections the workers' Redis client needs: one per
// queue for the read that blocks (XREADGROUP BLOCK, up to Poll), and
// Parallel more for the deliveries of one queue settling at once. Give the
// workers a client of their own with that many (redisconn.NewBlocking),
// never the request path's: there, every queue's blocking
// read holds a pooled connection, and enough queues take them all.
func (o Options) Conns() int {
	return len(o.Queues) + cmp.Or(max(o.Parallel, 0), defaultParallel)
}

func (o *Options) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.Timeout, 10*time.Second)
	if o.Parallel <= 0 {
		o.Parallel = defaultParallel
	}
	if o.BulkMax <= 0 {
		o.BulkMax = 10000
	}
	def(&o.MinBackoff, time.Second)
	def(&o.MaxBackoff, 10*time.Minute)
	def(&o.GiveUpAfter, time.Hour)
	def(&o.Refresh, 5*time.Second)
	def(&o.Poll, time.Second)
	def(&o.Trim, 10*time.Second)
	if o.Consumer == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.Consumer = host + "-" + hex.EncodeToString(b[:])
	}
	if o.Client == nil {
		o.Client = newClient(o.Timeout)
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
}

// Outbox is what the workers ask of the queue: the switch its scripts read
// before writing an event, and the counts of events they dropped from a
// full outbox. The queue owns the HASH both live in (queue.Store has them).
type Outbox interface {
	SetOutbox(ctx context.Context, queue string, on bool, bulkMax int) error
	TakeOutboxDrops(ctx context.Context, queue string) (map[string]int64, error)
}
