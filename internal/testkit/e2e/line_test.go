package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/wait"
	"github.com/waitroom/waitroom/internal/web/linedoc"
)

// placeAnswer is a far-back place as the page and the server work it out.
type placeAnswer struct {
	Position int64 `json:"position"`
	ETA      int64 `json:"eta_seconds"`
	Low      int64 `json:"eta_low_seconds"`
	High     int64 `json:"eta_high_seconds"`
}

// serverPlace is the server's far-back answer for arrival, age after the
// line was read, rounded as the status answer rounds it (httpapi's
// writeTicket); nil where the server would ask Redis.
func serverPlace(l queue.Line, arrival int64, age time.Duration) *placeAnswer {
	t, ok := l.Ticket(arrival, age)
	if !ok {
		return nil
	}
	return &placeAnswer{Position: t.Position, ETA: int64((t.ETA + time.Second - 1) / time.Second),
		Low: int64(t.ETALow / time.Second), High: int64((t.ETAHigh + time.Second - 1) / time.Second)}
}

// The page's arithmetic (web/static/line-math.js, run in Chromium) and the
// server's far-back status give the same position and wait for the same
// line, arrival number and age: over generated lines (lengths, places
// gone from them, refill sizes, abandonment on or off), every arrival
// number in and around the line and ages before, at and after ticks.
func TestLineMathMatchesServer(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 3, RefillInterval: time.Hour, SessionTTL: time.Minute}})
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 12))
	type input struct {
		Arrival int64 `json:"arrival"`
		AgeMS   int64 `json:"age_ms"`
	}
	filled, compared, placed := 0, 0, 0
	for round, c := range []struct {
		add, refill int
		abandon     time.Duration
	}{
		{40, 1, 0}, {600, 3, 0}, {900, 10, 2 * time.Minute}, {1500, 1, 2 * time.Minute}, {400, 100, 0},
	} {
		s.fillWaiting(fmt.Sprintf("lm%d", round), c.add)
		filled += c.add
		// Places gone from the line, here and there: the line thins.
		for i := 0; i < c.add/10; i++ {
			s.remove(fmt.Sprintf("lm%d-%d", round, r.IntN(c.add)))
		}
		refill := c.refill
		if err := queue.NewInspector(s.store).UpdateSettings(ctx, s.queue, queue.Update{RefillSize: &refill, AbandonAfter: &c.abandon}); err != nil {
			t.Fatal(err)
		}
		if err := s.store.RefreshSnapshot(ctx, s.queue, true); err != nil {
			t.Fatal(err)
		}
		l, ok := s.store.Line(s.queue, time.Now())
		if !ok {
			t.Fatal("no line")
		}
		doc := linedoc.Encode(s.queue, l)
		first, last := l.Arrivals[0], l.Arrivals[len(l.Arrivals)-1]
		until := l.UntilNextTick.Milliseconds()
		var in []input
		for range 400 {
			a := first - 3 + r.Int64N(last-first+7)
			for _, age := range []int64{0, 1, r.Int64N(2500), until - 1, until, until + 1, until + l.RefillInterval.Milliseconds()*int64(r.IntN(3))} {
				if age >= 0 {
					in = append(in, input{a, age})
				}
			}
		}
		inJSON, _ := json.Marshal(in)
		got := importing[[]*placeAnswer](b, "line-math.js", fmt.Sprintf(`%s.map((x) => m.place(%s, x.arrival, x.age_ms))`, inJSON, doc.Body))
		if len(got) != len(in) {
			t.Fatalf("%d answers for %d questions", len(got), len(in))
		}
		for i, x := range in {
			want := serverPlace(l, x.Arrival, time.Duration(x.AgeMS)*time.Millisecond)
			compared++
			if (want == nil) != (got[i] == nil) || want != nil && *want != *got[i] {
				t.Fatalf("round %d, arrival %d, age %d ms: page %+v, server %+v\ndocument %s", round, x.Arrival, x.AgeMS, got[i], want, doc.Body)
			}
			if want != nil {
				placed++
			}
		}
	}
	if placed < compared/4 {
		t.Fatalf("only %d of %d answers placed anyone: the rounds test too little", placed, compared)
	}
	t.Logf("%d places in line over the rounds; %d questions, %d placed far back, page and server agree", filled, compared, placed)
}

// A page far back follows the line's public document: after its enter it
// reads /line, works out its place there, shows it as "about", never a
// higher number than before, and asks the origin for no status while it
// stays far from the head (the document is the same for everyone, so
// nginx or a CDN answers it: the origin sees none of these requests).
func TestFarBackPageFollowsTheDocument(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	// 50 a second, 5,000 ahead: 100 ticks, the page reads every 10 s or
	// so, and the line reaches it (ten ticks from the head) after 90 s.
	// Three reads take about 30 s, which leaves a loaded machine a minute
	// (at 100 a second it left 20 s, and a slow page read three times
	// only once the line had reached it, and asked for its status).
	s := newStack(t, stackOptions{settings: fastTicks(50)})
	s.fillWaiting("ahead", 5000)
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	lines := func() int {
		return s.calls.count(func(c call) bool { return strings.HasSuffix(c.path, "/line") })
	}
	statuses := func() int {
		return s.calls.count(func(c call) bool { return strings.HasSuffix(c.path, "/status") })
	}
	b.waitJS(10*time.Second, "a place in line", `document.body.dataset.state === 'waiting'`)
	statusAtStart := statuses() // the page's first look for a place (401) before its enter
	var shown []int64           // the positions shown, in turn ("about 1,485": 1485)
	wait.For(t, 90*time.Second, "three reads of the document", func() (bool, string) {
		digits := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, b.text("#position"))
		n, err := strconv.ParseInt(digits, 10, 64)
		if err == nil && (len(shown) == 0 || shown[len(shown)-1] != n) {
			shown = append(shown, n)
		}
		return lines() >= 3, fmt.Sprintf("%d reads of /line, %d statuses", lines(), statuses())
	})
	if n := statuses() - statusAtStart; n != 0 {
		t.Fatalf("%d status requests far back, want none (reads of /line: %d)", n, lines())
	}
	for i := 1; i < len(shown); i++ {
		if shown[i] > shown[i-1] {
			t.Fatalf("the position shown rose: %v", shown)
		}
	}
	if len(shown) == 0 || !strings.HasPrefix(b.text("#position"), "about") {
		t.Fatalf("the position shown: %q (%v)", b.text("#position"), shown)
	}
	// The line ahead goes (a refill raised past it): the next look finds
	// the place near the head, and from then on the origin answers it.
	all := 100000
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{RefillSize: &all}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 90*time.Second, "a status once near the head", func() (bool, string) {
		return statuses() > statusAtStart, fmt.Sprintf("%d reads of /line, %d statuses", lines(), statuses())
	})
}

// A far-back page over a minute of virtual time (Chromium's, the page's
// timers and clock; network fetches hold it): it reads the line's document
// on its poll schedule and asks the origin for no status, since in a
// minute the line cannot bring it near the head (10 places a tick, 5,000
// ahead).
func TestFarBackPageVirtualMinute(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: time.Minute}})
	s.fillWaiting("ahead", 5000)
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue)
	b.waitJS(10*time.Second, "a place in line", `document.body.dataset.state === 'waiting'`)
	entered := time.Now()
	// Virtual time runs far faster than the server's: wait (in real time)
	// until the replica's snapshot holds the page's place (one read after
	// the page entered), or its first look would rightly find the document
	// unable to place it, and ask. (Not a count of the line: under load
	// the fill takes long enough for ticks to admit some of it.)
	wait.For(t, 30*time.Second, "the page's place in the snapshot", func() (bool, string) {
		l, ok := s.store.Line(s.queue, time.Now())
		return ok && l.Read.After(entered), fmt.Sprintf("snapshot %v read %v, the page entered by %v", ok, l.Read, entered)
	})
	lines := func() int { return s.calls.count(func(c call) bool { return strings.HasSuffix(c.path, "/line") }) }
	statuses := func() int { return s.calls.count(func(c call) bool { return strings.HasSuffix(c.path, "/status") }) }
	lines0, statuses0 := lines(), statuses()

	expired := make(chan struct{})
	var once sync.Once
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if _, ok := ev.(*emulation.EventVirtualTimeBudgetExpired); ok {
			once.Do(func() { close(expired) })
		}
	}); err != nil {
		t.Fatal(err)
	}
	budget := float64(time.Minute / time.Millisecond)
	if _, err := chromedp.Call(b.ctx, emulation.SetVirtualTimePolicy, emulation.SetVirtualTimePolicyParams{
		Policy: emulation.VirtualTimePolicyPauseIfNetworkFetchesPending, Budget: &budget}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-expired:
	case <-time.After(90 * time.Second):
		t.Fatalf("a minute of virtual time did not pass in 90 s (reads of /line %d, statuses %d)", lines()-lines0, statuses()-statuses0)
	}
	read, asked := lines()-lines0, statuses()-statuses0
	t.Logf("a virtual minute far back: %d reads of /line, %d status requests; shown %q", read, asked, b.text("#position"))
	if read < 1 || asked != 0 {
		t.Fatalf("a virtual minute far back: %d reads of /line, %d status requests; want some reads and no status", read, asked)
	}
	if !strings.HasPrefix(b.text("#position"), "about") {
		t.Fatalf("#position %q, want an estimate", b.text("#position"))
	}
}
