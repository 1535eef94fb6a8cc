package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/paid"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// The back office shows the price of a place in force and what people
// paid over the last 5 minutes: after a network's priced enters, the
// panel's figures are theirs.
func TestAdminDefencesPanel(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	price := queue.Price{Bits: 8, CalmArrivals: 100, MaxBits: 12}
	var rec *paid.Recorder
	s := newStack(t, stackOptions{
		behindProxy: true,
		settings:    queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: price},
		api: func(o *httpapi.Options) {
			var err error
			if rec, err = paid.New(o.Redis.(paid.Redis), paid.Options{Queues: o.Store.Queues()}); err != nil {
				t.Fatal(err)
			}
			o.Paid = rec
			o.Defences = paid.Viewer{Recorder: rec, Policy: paid.Sources{Price: price, Settings: queue.NewInspector(o.Store)}.Policy}.View
		},
	})
	api := s.url + "/api/v1/queues/" + s.queue
	from := func(method, path, client, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, api+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", client)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	enterFrom := func(client, body string) int {
		t.Helper()
		res := from("POST", "/enter", client, body)
		res.Body.Close()
		return res.StatusCode
	}
	enter := func(body string) int { return enterFrom("203.0.113.7", body) }
	// What the enter and challenge handlers record, for the stand-in
	// below.
	var events []paid.Event
	// The interval's admissions go to another network, which then has a
	// place waiting at the head: the rest wait, and a network's waiting
	// places are what its price counts. The scheduler's first tick refills
	// the bucket once, whenever a loaded machine runs it, so that network
	// enters until one of its places waits; a tick after that admits its
	// place, never one of the priced network's.
	for waits := false; !waits; {
		if len(events) == 3 {
			t.Fatal("another network's three enters: none waits")
		}
		res := from("POST", "/enter", "192.0.2.1", "{}")
		var tk struct {
			Status string `json:"status"`
		}
		err := json.NewDecoder(res.Body).Decode(&tk)
		res.Body.Close()
		if res.StatusCode != 200 || err != nil {
			t.Fatalf("another network's enter: %d %v", res.StatusCode, err)
		}
		events = append(events, paid.Placed(0))
		waits = tk.Status == "WAITING"
	}
	// One network: its first place is free, each next one priced.
	if code := enter("{}"); code != 200 {
		t.Fatalf("first enter: %d", code)
	}
	events = append(events, paid.Placed(0))
	var paidBits []int
	for range 3 {
		if code := enter("{}"); code != 403 {
			t.Fatalf("a network's next enter without a proof: %d, want 403", code)
		}
		res := from("GET", "/challenge", "203.0.113.7", "")
		var ch struct {
			Challenge  string `json:"challenge"`
			Difficulty int    `json:"difficulty"`
		}
		err := json.NewDecoder(res.Body).Decode(&ch)
		res.Body.Close()
		if err != nil || ch.Difficulty < price.Bits || ch.Difficulty > price.MaxBits {
			t.Fatalf("challenge %+v (%v), want %d…%d bits", ch, err, price.Bits, price.MaxBits)
		}
		events = append(events, paid.Asked(ch.Difficulty))
		var body bytes.Buffer
		_ = json.NewEncoder(&body).Encode(map[string]string{"challenge": ch.Challenge, "nonce": challenge.Solve(ch.Challenge, ch.Difficulty)})
		if code := enter(body.String()); code != 200 {
			t.Fatalf("priced enter: %d", code)
		}
		events = append(events, paid.Placed(ch.Difficulty))
		paidBits = append(paidBits, ch.Difficulty)
	}
	// A server whose handlers do not record yet gets the events they
	// would have recorded, so the panel is tested either way.
	if sum, err := rec.Summary(t.Context(), s.queue, 5); err != nil {
		t.Fatal(err)
	} else if sum.Places == 0 {
		for _, e := range events {
			rec.Record(s.queue, e)
		}
	}
	if err := rec.Flush(t.Context()); err != nil { // as every replica does every 10 s
		t.Fatal(err)
	}

	b := newBrowser(t, chromium)
	section := signInAdmin(b, s)
	free := len(events) - 2*len(paidBits) // the places made without a proof
	b.waitJS(10*time.Second, "the figures of the last 5 minutes", fmt.Sprintf(`%s === '%d (3)'`, jsText(section+" .paid-places"), free+len(paidBits)))
	// Nearest rank: of the places (the free ones, three priced), the p50 is
	// the ceil(n/2)th smallest; of the three challenges, the second.
	places := append(make([]int, free), paidBits...)
	slices.Sort(places)
	p50 := places[(len(places)+1)/2-1]
	asked := slices.Sorted(slices.Values(paidBits))
	top := asked[2]
	for sel, want := range map[string]string{
		".def-ceiling":     "12 bits",
		".def-network":     "8 bits, +1 per doubling above 100 arrivals/s",
		".def-networks":    "no networks file",
		".def-human":       "off",
		".paid-title":      "What people paid (last 5 minutes)",
		".paid-bits":       fmt.Sprintf("%d / %d / %d", p50, top, top),
		".paid-challenges": fmt.Sprintf("3 (%d / %d / %d)", asked[1], top, top),
		".paid-human":      "0 / 0",
		".pow":             "8 bits from a network's 2nd place, ceiling 12",
	} {
		if got := b.text(section + " " + sel); got != want {
			t.Errorf("%s = %q, want %q", sel, got, want)
		}
	}
	b.screenshot("defences")
}
