package e2e

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// A priority place's page: joined through a token whose lane
// claim names the queue's 30 % lane, it counts its own lane's line, not
// the 40 people of the general lane, and asks its status rather than
// placing itself from the general line's document.
func TestPriorityPlacePage(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	secret := newSecret()
	settings := queue.Settings{RefillSize: 10, RefillInterval: time.Hour, SessionTTL: time.Hour}
	s := newStack(t, stackOptions{settings: settings, joinSecret: secret})
	ctx := context.Background()
	lanes := queue.Lanes{{Name: "priority", Share: 0.3}}
	if err := queue.NewInspector(s.store).UpdateSettings(ctx, s.queue, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	s.fillWaiting("crowd", 50) // the first bucket's 10 enter at once: 40 wait
	for i := range 2 {
		if _, err := s.store.Enter(ctx, s.queue, queue.Entry{Caller: queue.Caller{User: queue.LaneMember("priority", fmt.Sprint("ahead-", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/q/" + s.queue + "?join=" + url.QueryEscape(s.laneJoinToken(secret, "kim", "priority")))
	b.waitJS(joinDeadline, "the waiting state", jsState("waiting"))
	if member := s.member(b); member != queue.LaneMember("priority", "kim") {
		t.Fatalf("member %q, want the priority lane's place", member)
	}
	b.waitJS(10*time.Second, "position 3", `document.getElementById('position').textContent.trim() === '3'`)
	if ahead := b.number("#ahead"); ahead != 2 {
		t.Errorf("people ahead %d, want the lane's 2", ahead)
	}
	if tk := s.status(queue.LaneMember("priority", "kim")); tk.Position != 3 || tk.Waiting != 3 {
		t.Errorf("store: %+v, want 3rd of 3 in the lane", tk)
	}
	b.screenshot("priority-place")

	// A join for a lane the queue does not have is refused, with a
	// clear message, and makes no place.
	other := newBrowser(t, chromium)
	other.navigate(s.url + "/q/" + s.queue + "?join=" + url.QueryEscape(s.laneJoinToken(secret, "lee", "vip")))
	other.waitJS(10*time.Second, "the error", jsState("error"))
	if tk := s.status(queue.LaneMember("vip", "lee")); tk.Status != queue.NotWaiting {
		t.Errorf("an unknown lane's join made a place: %+v", tk)
	}
}

// The back office's sale day: the operator sets a lane and
// sees each line, adds a window to the schedule in UTC, sees the window
// in force and on the chart, and watches the forecast change as they type
// a refill size.
func TestAdminSaleDay(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	s := newStack(t, stackOptions{settings: queue.Settings{RefillSize: 10, RefillInterval: time.Second, SessionTTL: time.Hour, MaxActive: 10}})
	s.fillWaiting("crowd", 130) // max_active holds most in line
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/admin")
	b.waitJS(5*time.Second, "the sign-in form", `document.body.dataset.state === 'signed-out' && !document.getElementById('login').hidden`)
	section := fmt.Sprintf(`[data-queue=%q]`, s.queue)
	b.do("sign in",
		chromedp.SendKeys(chromedp.CSS("#token"), adminToken),
		chromedp.Click(chromedp.CSS("#login-btn")))
	b.waitJS(5*time.Second, "the dashboard", fmt.Sprintf(`document.querySelector(%q) !== null`, section))
	if got := b.text(section + " .lines-list"); !strings.Contains(got, "No lanes") {
		t.Errorf(".lines-list = %q, want no lanes", got)
	}

	// A lane.
	lanes := section + " .lanes-input"
	b.do("type a lane",
		chromedp.SendKeys(chromedp.CSS(lanes), "priority 30"),
		chromedp.Click(chromedp.CSS(section+" .lanes-submit")))
	b.waitJS(5*time.Second, "each line", fmt.Sprintf(`document.querySelectorAll(%q).length === 2`, section+" .line-row"))
	if got := b.text(section + ` .line-row[data-lane="priority"]`); !strings.Contains(got, "30% of each refill") {
		t.Errorf("priority line %q", got)
	}
	lines, err := queue.NewInspector(s.store).Lines(context.Background(), s.queue)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.text(section+` .line-row[data-lane=""]`), fmt.Sprintf("general: 70%% of each refill, %d waiting", lines[0].Waiting); got != want {
		t.Errorf("general line %q, want %q", got, want) // nobody is admitted meanwhile: max_active holds them
	}
	v, err := queue.NewInspector(s.store).Values(context.Background(), s.queue)
	if err != nil || len(v["lanes"].(queue.Lanes)) != 1 {
		t.Fatalf("stored lanes: %v, %v", v["lanes"], err)
	}
	// What cannot be read is said so, and sends nothing.
	b.do("type lanes wrong",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.value = 'priority thirty'; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, lanes)),
		chromedp.Click(chromedp.CSS(section+" .lanes-submit")))
	b.waitJS(5*time.Second, "the lanes error", fmt.Sprintf(`!document.querySelector(%q).hidden`, section+" .lanes-error"))

	// The forecast, live, with the cap and the lane gone.
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{MaxActive: ptr(0), Lanes: &queue.Lanes{}}); err != nil {
		t.Fatal(err)
	}
	input := section + " [data-setting=refill_size] .setting-input"
	b.do("type a refill size",
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const el = document.querySelector(%q); el.focus(); el.value = ''; el.dispatchEvent(new Event('input', {bubbles: true})); })()`, input)),
		chromedp.SendKeys(chromedp.CSS(input), "20"))
	b.waitJS(10*time.Second, "the forecast", fmt.Sprintf(`(() => { const p = document.querySelector(%q); return p && !p.hidden && p.textContent.includes('With 20 per 1 s'); })()`, section+" .forecast"))
	if got := b.text(section + " .forecast"); !strings.Contains(got, "people waits ~") || !strings.Contains(got, "; now ~") {
		t.Errorf(".forecast = %q", got)
	}
	b.screenshot("forecast")

	// A window: from a minute ago to an hour on, refill 3. The tick
	// applies it; the page shows it in force and on the chart.
	start := time.Now().UTC().Add(-time.Minute)
	end := start.Add(time.Hour)
	b.do("add a window",
		chromedp.Click(chromedp.CSS(section+" .window-add")),
		chromedp.SetValue(chromedp.CSS(section+" .window-row .start-date"), start.Format("2006-01-02")),
		chromedp.SetValue(chromedp.CSS(section+" .window-row .start-time"), start.Format("15:04:05")),
		chromedp.SetValue(chromedp.CSS(section+" .window-row .end-date"), end.Format("2006-01-02")),
		chromedp.SetValue(chromedp.CSS(section+" .window-row .end-time"), end.Format("15:04:05")),
		chromedp.SendKeys(chromedp.CSS(section+" .window-row .w-refill"), "3"),
		chromedp.SendKeys(chromedp.CSS(section+" .window-row .w-lanes"), "priority 50"),
		chromedp.Click(chromedp.CSS(section+" .schedule-submit")))
	b.waitJS(5*time.Second, "the schedule saved", fmt.Sprintf(`!document.querySelector(%q).hidden`, section+" .schedule-ok"))
	sched, _, err := queue.NewInspector(s.store).Schedule(context.Background(), s.queue)
	if err != nil || len(sched.Windows) != 1 || *sched.Windows[0].RefillSize != 3 || !sched.Windows[0].Start.Equal(start.Truncate(time.Second)) {
		t.Fatalf("stored schedule: %+v, %v", sched, err)
	}
	// The window's lanes, set in its row, stored and shown again there.
	if l := sched.Windows[0].Lanes; l == nil || len(*l) != 1 || (*l)[0].Name != "priority" || (*l)[0].Share != 0.5 {
		t.Fatalf("the window's lanes: %+v", sched.Windows[0].Lanes)
	}
	if got := eval[string](b, fmt.Sprintf(`document.querySelector(%q).value`, section+" .window-row .w-lanes")); got != "priority 50" {
		t.Errorf("the window's lanes field after saving: %q", got)
	}
	// The audit log words the windows and the lanes as the section does,
	// not as JSON.
	b.waitJS(15*time.Second, "the schedule's change in the audit log", fmt.Sprintf(
		`[...document.querySelectorAll(%q)].some((li) => li.textContent.startsWith('windows: '))`, section+" .audit-change"))
	changes := eval[[]string](b, fmt.Sprintf(`[...document.querySelectorAll(%q)].map((li) => li.textContent)`, section+" .audit-change"))
	var windows, lanesChange string
	for _, c := range changes {
		if strings.HasPrefix(c, "windows: ") {
			windows = c
		}
		if strings.HasPrefix(c, "lanes: none → ") {
			lanesChange = c
		}
		if strings.Contains(c, "{") || strings.Contains(c, "[") {
			t.Errorf("an audit change in JSON: %q", c)
		}
	}
	if !strings.HasPrefix(windows, "windows: none → ") || !strings.HasSuffix(windows, "(refill 3, lanes priority 50%)") {
		t.Errorf("the schedule's audit change %q, want none → the window, refill 3, lanes priority 50%%", windows)
	}
	if lanesChange != "lanes: none → priority 30%" {
		t.Errorf("the lanes' audit change %q (all: %q)", lanesChange, changes)
	}

	// The lanes fields look like the number fields beside them.
	if got := eval[string](b, fmt.Sprintf(`(() => {
	  const look = (sel) => { const s = getComputedStyle(document.querySelector(sel)); return [s.borderTopStyle, s.borderTopWidth, s.borderRadius, s.minHeight, s.paddingLeft].join(' '); };
	  const want = look(%q);
	  return [%q, %q].filter((sel) => look(sel) !== want).join(', ');
	})()`, section+" .window-row .w-refill", section+" .lanes-input", section+" .window-row .w-lanes")); got != "" {
		t.Errorf("unlike the number fields: %s", got)
	}
	b.waitJS(10*time.Second, "the window in force", fmt.Sprintf(`document.querySelector(%q).textContent.includes('In force') && document.querySelector(%q).textContent.includes('refill 3')`,
		section+" .window-state", section+" .window-state"))
	b.waitJS(15*time.Second, "the window on the chart", fmt.Sprintf(`document.querySelector(%q) !== null`, section+" svg.chart-ticks rect.window-band"))
	b.screenshot("window-in-force")

	// An overlap is the server's to refuse, and the page says why.
	b.do("add an overlapping window",
		chromedp.Click(chromedp.CSS(section+" .window-add")),
		chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const rows = document.querySelectorAll(%q); const r = rows[rows.length - 1];
			r.querySelector('.start-date').value = %q; r.querySelector('.start-time').value = %q;
			r.querySelector('.end-date').value = %q; r.querySelector('.end-time').value = %q; })()`,
			section+" .window-row", start.Format("2006-01-02"), start.Add(time.Minute).Format("15:04:05"), end.Format("2006-01-02"), end.Format("15:04:05"))),
		chromedp.Click(chromedp.CSS(section+" .schedule-submit")))
	b.waitJS(5*time.Second, "the overlap refused", fmt.Sprintf(`!document.querySelector(%q).hidden && document.querySelector(%q).textContent.includes('invalid_schedule')`,
		section+" .schedule-error", section+" .schedule-error"))
}

func ptr[T any](v T) *T { return &v }
