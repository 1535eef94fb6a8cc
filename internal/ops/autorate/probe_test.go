package autorate

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/safeurl"
	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// TestProbeFollowsNoRedirect: the probe's answer is
// the probe URL's own; a redirect (to cloud metadata, say) is not
// followed. Under the default policy a loopback probe URL is not polled
// at all, by address or by name. Before, the probe's client followed
// redirects and dialled anything.
func TestProbeFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	var targetHits, siteHits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { targetHits.Add(1) }))
	defer target.Close()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		siteHits.Add(1)
		http.Redirect(w, r, target.URL+"/latest/meta-data/", http.StatusFound)
	}))
	defer site.Close()
	rdb := redistest.Client(t)
	q := queueName(t)
	r, store := newRunner(t, rdb, q, nil) // safeurl's client, loopback allowed
	ctx := context.Background()
	if err := queue.NewInspector(store).UpdateSettings(ctx, q, queue.Update{AdaptEnabled: ptr(true), OriginMaxErrorRate: ptr(0.5),
		OriginProbeURL: ptr(site.URL + "/healthz")}); err != nil {
		t.Fatal(err)
	}
	r.refresh(ctx, q)
	if siteHits.Load() != 1 || targetHits.Load() != 0 {
		t.Fatalf("site %d, redirect target %d requests: want the probe URL's once and no redirect followed", siteHits.Load(), targetHits.Load())
	}

	strict, err := New(Options{Store: store, Redis: rdb, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(strings.TrimPrefix(site.URL, "http://"), ":")
	for _, u := range []string{site.URL + "/healthz", "http://localhost:" + port + "/healthz", "http://2130706433:" + port + "/"} {
		if err := queue.NewInspector(store).UpdateSettings(ctx, q, queue.Update{OriginProbeURL: ptr(u)}); err != nil {
			t.Fatal(err)
		}
		_ = rdb.Del(ctx, rediskeys.OriginLease(q)).Err() // the first runner's lease
		strict.refresh(ctx, q)
		if n := siteHits.Load(); n != 1 {
			t.Fatalf("%s: polled under the default policy (%d requests)", u, n)
		}
	}
	if (safeurl.Policy{}).CheckURL(site.URL) == nil {
		t.Fatal("the default policy allows loopback")
	}
}
