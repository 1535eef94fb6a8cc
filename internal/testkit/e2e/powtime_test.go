package e2e

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// powTimeExpected is how long the test's proof of work is expected to
// take in the page: long enough that the worker's reports (every 250 ms)
// come well before a solution, so the page has a time left to say.
const powTimeExpected = 8 * time.Second

// While the page solves a proof of work that takes seconds, it says about
// how long it expects it to take yet, in the reader's language, with a
// number of seconds (waiting-format.js checkText), and then gets its place.
// The difficulty is chosen from the rate this machine's page worker
// measures first, which the test logs: the figure docs quote for what a
// difficulty costs a person.
func TestChallengeSaysTimeLeft(t *testing.T) {
	chromium := chromiumPath(t)
	// The ceiling a person pays (17 bits by default) would cap the
	// difficulty chosen below to a second or two of hashing, too short
	// for the page to say a time: this queue's own difficulty is what the
	// test sets, so the ceiling is lifted.
	settings := fastTicks(1)
	settings.Price.MaxBits = queue.MaxChallengeDifficulty
	s := newStack(t, stackOptions{settings: settings})

	// The page worker's rate: a few solves in a page of the server (its
	// origin runs the worker), from the server's own challenges.
	probe := 16
	s.update(queue.Update{ChallengeDifficulty: &probe})
	b := newBrowser(t, chromium)
	b.navigate(s.url + "/admin")
	var hashes, ms float64
	const probes = 5
	for range probes {
		r := solveInPage(b, s, probe, 0, false)
		hashes += float64(r.Tried)
		ms += r.MS
	}
	rate := hashes / ms * 1000
	t.Logf("the page worker's rate in headless Chromium: %.0f hashes/s (%d solves at difficulty %d, %.0f hashes in %.0f ms)",
		rate, probes, probe, hashes, ms)
	d := min(queue.MaxChallengeDifficulty, max(12, int(math.Round(math.Log2(rate*powTimeExpected.Seconds())))))
	s.update(queue.Update{ChallengeDifficulty: &d})
	t.Logf("difficulty %d: 2^%d hashes expected, about %.1f s at that rate", d, d, math.Exp2(float64(d))/rate)

	for _, tc := range []struct {
		lang  string
		first string         // the words before the worker's rate is known
		left  *regexp.Regexp // the words with a number of seconds
	}{
		{"en", "Checking your browser… (this takes a second)", regexp.MustCompile(`^Checking your browser… about \d+ s left$`)},
		{"ko", "브라우저를 확인하는 중… (잠시면 됩니다)", regexp.MustCompile(`^브라우저를 확인하는 중… 약 \d+초 남음$`)},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			// A solve is a random draw: about 3 % end before the first
			// report at 8 s expected, with nothing to say but the first
			// words. Such a page is told apart and another joins.
			const attempts = 4
			for i := 1; ; i++ {
				b := newBrowser(t, chromium)
				recordStatusTexts(b)
				b.navigate(s.url + "/q/" + s.queue + "?lang=" + tc.lang)
				b.waitJS(2*time.Minute, "a place after the check", jsState("waiting")+" || "+jsState("entered"))
				seen := eval[[]string](b, `window.__statusTexts`)
				if !slices.Contains(seen, tc.first) {
					t.Errorf("#status-text went %q; want %q first while checking", seen, tc.first)
				}
				for _, text := range seen {
					// Past the expectation the page says so, never a negative time.
					if strings.ContainsAny(text, "-−") {
						t.Errorf("#status-text said %q", text)
					}
				}
				if slices.ContainsFunc(seen, tc.left.MatchString) {
					t.Logf("attempt %d: #status-text went %q", i, seen)
					b.screenshot("placed-after-timed-check-" + tc.lang)
					return
				}
				if i == attempts {
					t.Fatalf("#status-text went %q in the last of %d joins; want a time left matching %s while it checks", seen, attempts, tc.left)
				}
				t.Logf("attempt %d solved before the page could say a time (#status-text went %q): joining again", i, seen)
			}
		})
	}
}

// What the page says while it checks, for each time left (ms) it may
// reckon (waiting-format.js checkText): the plain words without a rate,
// whole seconds rounded up, minutes and hours for long solves, a few
// seconds at the end, and no negative time past the expectation; and the
// time left from the worker's report (waiting-pow.js checkLeft).
func TestCheckText(t *testing.T) {
	t.Parallel()
	chromium := chromiumPath(t)
	base := serveModules(t)
	b := newBrowser(t, chromium)
	b.navigate(base + "/")
	got := importing[[]string](b, "waiting-format.js", `[NaN, Infinity, -1, -600000, 0, 1500, 2000, 2001, 3000, 88500, 89001, 90000, 5340000, 5400001, 36000000].map(m.checkText)`)
	want := []string{
		"Checking your browser… (this takes a second)",
		"Checking your browser… (this takes a second)",
		"Checking your browser… taking longer than expected",
		"Checking your browser… taking longer than expected",
		"Checking your browser… a few seconds left",
		"Checking your browser… a few seconds left",
		"Checking your browser… a few seconds left",
		"Checking your browser… about 3 s left",
		"Checking your browser… about 3 s left",
		"Checking your browser… about 89 s left",
		"Checking your browser… about 2 min left",
		"Checking your browser… about 2 min left",
		"Checking your browser… about 89 min left",
		"Checking your browser… about 2 h left",
		"Checking your browser… about 10 h left",
	}
	if !slices.Equal(got, want) {
		t.Errorf("checkText:\n got %q\nwant %q", got, want)
	}
	// 2^16 hashes expected; 16,384 tried in 250 ms by the worker is
	// 65,536 a second, so 1 s in all: 700 ms left after 300 ms.
	left := importing[[]float64](b, "waiting-pow.js", `[m.checkLeft(65536, 16384, 250, 300), m.checkLeft(65536, 16384, 250, 1300), m.checkLeft(65536, 0, 250, 300), m.checkLeft(65536, 100, 0, 300)].map((v) => isNaN(v) ? -1e9 : v)`)
	if wantLeft := []float64{700, -300, -1e9, -1e9}; !slices.Equal(left, wantLeft) {
		t.Errorf("checkLeft: %v, want %v (-1e9: NaN, no rate yet)", left, wantLeft)
	}
}
