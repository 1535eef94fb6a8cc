package main

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// seedForms are the ways a seed could show: its hex in either case, its
// bytes in base64 (standard and URL), and every run of 16 of its hex
// digits (8 bytes), so that a part of it shown is found too.
func seedForms(seedHex string) []string {
	raw, _ := hex.DecodeString(seedHex)
	forms := []string{seedHex, strings.ToUpper(seedHex), base64.StdEncoding.EncodeToString(raw), base64.RawURLEncoding.EncodeToString(raw)}
	for i := 0; i+16 <= len(seedHex); i++ {
		forms = append(forms, seedHex[i:i+16], strings.ToUpper(seedHex[i:i+16]))
	}
	return forms
}

// The sealed seed of a draw shows nowhere before the opening: not in any
// answer of the public API or the back office (bodies and headers), nor
// the service's log at debug, nor its metrics, nor a webhook delivered,
// while a crowd enters and polls the pre-queue and an operator moves the
// opening (and is refused closing the pre-queue again). Every one of those
// is collected and searched for the seed in every form (seedForms). At
// the opening it is revealed: the draw's list then has it, which the same
// search finds.
func TestDrawSeedNeverShownBeforeTheOpening(t *testing.T) {
	secret := strings.Repeat("s", 32)
	var mu sync.Mutex
	var seen []string // everything published: answers, deliveries
	keep := func(what string, b []byte, h http.Header) {
		mu.Lock()
		defer mu.Unlock()
		var hs strings.Builder
		_ = h.Write(&hs)
		seen = append(seen, what+"\n"+hs.String()+"\n"+string(b))
	}
	deliveries := make(chan string, 64)
	hooks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		keep("webhook "+r.URL.Path, body, r.Header)
		deliveries <- string(body)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hooks.Close()

	queue := fmt.Sprintf("seal%d", time.Now().UnixNano())
	metricsAddr := freeAddr(t)
	log := &lockedBuffer{}
	r := startReplicaLogging(t, map[string]string{
		"WAITROOM_QUEUES": queue, "WAITROOM_REFILL_SIZE": "1", "WAITROOM_REFILL_INTERVAL": "1s",
		"WAITROOM_WEBHOOK_URL": hooks.URL + "/hook", "WAITROOM_WEBHOOK_SECRET": secret,
		"WAITROOM_ADMIN_TOKEN": adminToken, "WAITROOM_METRICS_ADDR": metricsAddr, "WAITROOM_LOG_LEVEL": "debug",
	}, log)
	rdb := redistest.Client(t)
	ctx := context.Background()
	wait.For(t, 10*time.Second, "the queue's webhooks flag to be set", func() (bool, string) {
		v, _ := rdb.HGet(ctx, rediskeys.Config(queue), "webhooks").Result()
		return v == "1", fmt.Sprintf("webhooks %q", v)
	})

	// do makes a request and keeps its answer.
	do := func(method, url, bearer, body string) []byte {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(method, url, rd)
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		keep(method+" "+url+" "+resp.Status, b, resp.Header)
		return b
	}
	api, admin := r.base+"/api/v1/queues/"+queue, r.base+"/admin/v1/queues/"+queue
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	opens := now.Add(40 * time.Second)
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }
	do("PATCH", admin, adminToken, fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q,"title":{"en":"Sale"}}`, at(now.Add(-time.Minute)), at(opens)))
	seed, err := rdb.Get(ctx, rediskeys.DrawSeed(queue)).Result()
	if err != nil || len(seed) != 64 {
		t.Fatalf("the sealed seed: %q %v", seed, err)
	}

	// A crowd in the pre-queue.
	var tokens []string
	for range 20 {
		var tk struct {
			PlaceToken     string `json:"place_token"`
			DrawCommitment string `json:"draw_commitment"`
		}
		if err := json.Unmarshal(do("POST", api+"/enter", "", "{}"), &tk); err != nil || tk.PlaceToken == "" || tk.DrawCommitment == "" {
			t.Fatalf("enter into the pre-queue: %+v %v", tk, err)
		}
		tokens = append(tokens, tk.PlaceToken)
	}
	for _, tok := range tokens {
		do("GET", api+"/status", tok, "")
	}
	later := opens.Add(5 * time.Second)
	do("PATCH", admin, adminToken, fmt.Sprintf(`{"opens_at":%q}`, at(later)))                                              // keeps the seed
	do("PATCH", admin, adminToken, fmt.Sprintf(`{"prequeue_from":%q,"opens_at":%q}`, at(now.Add(time.Minute)), at(later))) // 409 draw_sealed
	do("DELETE", api+"/place", tokens[3], "")
	for _, p := range []string{api, api + "/", api + "/line", api + "/draw", api + "/challenge", r.base + "/q/" + queue, r.base + "/q/" + queue + "/verify",
		r.base + "/readyz", r.base + "/healthz"} {
		do("GET", p, "", "")
	}
	for _, p := range []string{"/admin/v1/queues", "/admin/v1/me", "/admin/v1/settings/catalog", "/admin/v1/queues/" + queue,
		"/admin/v1/queues/" + queue + "/history", "/admin/v1/queues/" + queue + "/history?format=csv", "/admin/v1/queues/" + queue + "/audit",
		"/admin/v1/queues/" + queue + "/schedule", "/admin/v1/queues/" + queue + "/defences", "/admin/v1/queues/" + queue + "/forecast?refill_size=2"} {
		do("GET", r.base+p, adminToken, "")
	}
	do("GET", "http://"+metricsAddr+"/metrics", "", "")
	// The settings changes' webhooks (two PATCHes applied), delivered.
	for changed := 0; changed < 2; {
		select {
		case body := <-deliveries:
			changed += strings.Count(body, `"settings_changed"`)
		case <-time.After(15 * time.Second):
			t.Fatalf("%d settings_changed deliveries, want 2", changed)
		}
	}
	if n, _ := rdb.Time(ctx).Result(); !n.Before(opens) {
		t.Fatal("the opening came before everything was collected: the test proves nothing")
	}

	mu.Lock()
	published := append([]string{"the log\n" + log.String()}, seen...)
	mu.Unlock()
	forms := seedForms(seed)
	for _, text := range published {
		for _, f := range forms {
			if strings.Contains(text, f) {
				what, _, _ := strings.Cut(text, "\n")
				t.Fatalf("the sealed seed (%q of it) shows before the opening in %s", f, what)
			}
		}
	}
	t.Logf("searched %d answers and deliveries and %d bytes of log for %d forms of the seed", len(published)-1, len(log.String()), len(forms))

	// The opening: the seed is revealed, and the search finds it.
	do("PATCH", admin, adminToken, fmt.Sprintf(`{"opens_at":%q}`, at(now.Add(-time.Second))))
	wait.For(t, 15*time.Second, "the draw's list", func() (bool, string) {
		b := do("GET", api+"/draw", "", "")
		return strings.Contains(string(b), seed), string(b[:min(len(b), 120)])
	})
}
