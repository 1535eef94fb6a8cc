package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/ops/webhook"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// The service wired with WAITROOM_WEBHOOK_URL and _SECRET tells the site,
// signed, of an admission and of its end (POST .../done), with the user
// the pass names.
func TestWebhooksThroughTheService(t *testing.T) {
	secret := strings.Repeat("w", 32)
	events := make(chan webhook.Event, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]byte(secret), r.Header.Get(webhook.SignatureHeader), body, time.Now(), webhook.Tolerance); err != nil {
			t.Errorf("a delivery that does not verify: %v", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var b webhook.Body
		if err := json.Unmarshal(body, &b); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		for _, e := range b.Events {
			events <- e
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()

	queue := fmt.Sprintf("hooks%d", time.Now().UnixNano())
	r := startReplica(t, map[string]string{
		"WAITROOM_QUEUES": queue, "WAITROOM_REFILL_SIZE": "1", "WAITROOM_REFILL_INTERVAL": "1h",
		"WAITROOM_WEBHOOK_URL": srv.URL + "/hook", "WAITROOM_WEBHOOK_SECRET": secret,
	})
	api := "/api/v1/queues/" + queue
	// The worker turns the queue's events on at its first refresh.
	rdb := redistest.Client(t)
	wait.For(t, 10*time.Second, "the queue's webhooks flag to be set", func() (bool, string) {
		v, err := rdb.HGet(context.Background(), rediskeys.Config(queue), "webhooks").Result()
		if err != nil {
			return false, err.Error()
		}
		return v == "1", fmt.Sprintf("webhooks %q", v)
	})
	var in ticket
	if r.call(t, "POST", api+"/enter", "", &in); in.Status != "ENTERED" || in.Pass == "" {
		t.Fatalf("enter: %+v", in)
	}
	if code := r.call(t, "POST", api+"/done", in.Pass, nil); code != http.StatusNoContent {
		t.Fatalf("done: %d", code)
	}
	// Each script call's events are an entry of the outbox, delivered
	// concurrently: the done may arrive first (as WEBHOOKS.md says, order
	// is by each event's time, not by arrival).
	got := map[string]webhook.Event{}
	for len(got) < 2 {
		select {
		case e := <-events:
			if _, dup := got[e.Type]; dup || (e.Type != "admitted" && e.Type != "done") || e.Sub != in.UserID || e.Queue != queue || e.ID == "" {
				t.Fatalf("event %+v, want one admitted and one done of %s", e, in.UserID)
			}
			got[e.Type] = e
		case <-time.After(10 * time.Second):
			t.Fatalf("events %v: want admitted and done", got)
		}
	}
	if got["done"].Time.Before(got["admitted"].Time) {
		t.Errorf("done at %v before admitted at %v", got["done"].Time, got["admitted"].Time)
	}
}
