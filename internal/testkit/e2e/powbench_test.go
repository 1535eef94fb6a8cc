package e2e

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/trust/challenge"
)

// TestPowSolveTimes measures what the proof of work costs a person: the
// waiting page's worker (pow-worker.js) solving fresh challenges from the
// real server in headless Chromium, per difficulty. It is a measurement,
// not a check, so it runs only with WAITROOM_POW_BENCH=1:
//
//	WAITROOM_POW_BENCH=1 go test -run TestPowSolveTimes -v -timeout 30m ./internal/testkit/e2e/
//
// WAITROOM_POW_DIFFICULTIES (default 8,12,14,16,18,20) and
// WAITROOM_POW_SOLVES (default 21) change what it runs. Each difficulty
// stops early after a budget of three minutes, and the next ones are
// skipped once a median solve takes over a minute. It logs one line per
// difficulty: the median, quartiles and maximum wall time from posting
// the challenge to the worker until its answer (the worker's start
// included, as a person waits for it), and the hash rate.
func TestPowSolveTimes(t *testing.T) {
	if os.Getenv("WAITROOM_POW_BENCH") != "1" {
		t.Skip("a measurement: set WAITROOM_POW_BENCH=1 to run it")
	}
	chromium := chromiumPath(t)
	difficulties := []int{8, 12, 14, 16, 18, 20}
	if v := os.Getenv("WAITROOM_POW_DIFFICULTIES"); v != "" {
		difficulties = nil
		for f := range strings.SplitSeq(v, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("WAITROOM_POW_DIFFICULTIES: %v", err)
			}
			difficulties = append(difficulties, d)
		}
	}
	solves := 21
	if v := os.Getenv("WAITROOM_POW_SOLVES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("WAITROOM_POW_SOLVES=%q: want a whole number ≥ 1", v)
		}
		solves = n
	}
	pureJS := os.Getenv("WAITROOM_POW_PUREJS") == "1"         // the worker's fallback without WebCrypto
	batch, _ := strconv.Atoi(os.Getenv("WAITROOM_POW_BATCH")) // digests per await; 0: the worker's default

	s := newStack(t, stackOptions{settings: fastTicks(1)})
	b := newPowBrowser(t, chromium)
	// Any page of the server gives the worker its origin; the back office
	// starts nothing until someone signs in.
	b.navigate(s.url + "/admin")

	const budget = 3 * time.Minute
	for _, d := range difficulties {
		if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{ChallengeDifficulty: &d}); err != nil {
			t.Fatal(err)
		}
		var ms []float64
		var hashes, total float64
		start := time.Now()
		for i := 0; i < solves && time.Since(start) < budget; i++ {
			r := solveInPage(b, s, d, batch, pureJS)
			ms = append(ms, r.MS)
			hashes += float64(r.Tried)
			total += r.MS
		}
		slices.Sort(ms)
		med := quantile(ms, 0.5)
		// The rate over all solves, and the mean time it gives for the
		// 2^d hashes a solve takes on average: steadier than a median of
		// a few exponential draws.
		rate := hashes / total * 1000
		t.Logf("difficulty %2d: %2d solves  median %8.1f ms  p25 %8.1f  p75 %8.1f  max %8.1f ms  rate %.0f hashes/s  2^d/rate %8.1f ms  batch=%d pureJS=%v",
			d, len(ms), med, quantile(ms, 0.25), quantile(ms, 0.75), ms[len(ms)-1], rate, math.Exp2(float64(d))/rate*1000, batch, pureJS)
		if med > 60_000 {
			t.Logf("a median solve took over a minute at difficulty %d: the harder ones are skipped", d)
			break
		}
	}
}

// powSolve is one solve in the page: wall time, and hashes tried.
type powSolve struct {
	MS        float64 `json:"ms"`
	Tried     int64   `json:"tried"`
	Challenge string  `json:"challenge"`
	Nonce     string  `json:"nonce"`
}

// solveInPage fetches a challenge from the server in b's page, solves it
// in a fresh worker and checks the solution here.
func solveInPage(b *browser, s *stack, d, batch int, pureJS bool) powSolve {
	b.t.Helper()
	js := fmt.Sprintf(`(async () => {
	  const res = await fetch(%q, {cache: 'no-store'});
	  const ch = await res.json();
	  if (ch.difficulty !== %d) throw new Error('difficulty ' + ch.difficulty);
	  const t0 = performance.now();
	  const w = new Worker('/_waitroom/static/pow-worker.js');
	  try {
	    const r = await new Promise((resolve, reject) => {
	      w.onmessage = (e) => {
	        if (e.data.type === 'done') resolve(e.data);
	        else if (e.data.type === 'error') reject(new Error(e.data.message));
	      };
	      w.onerror = (e) => reject(new Error(e.message));
	      w.postMessage({challenge: ch.challenge, difficulty: ch.difficulty, batch: %d, pureJS: %v});
	    });
	    return {ms: performance.now() - t0, tried: r.tried, challenge: ch.challenge, nonce: r.nonce};
	  } finally {
	    w.terminate();
	  }
	})()`, "/api/v1/queues/"+url.PathEscape(s.queue)+"/challenge", d, batch, pureJS)
	r, err := chromedp.Run(b.ctx, chromedp.Evaluate[powSolve](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("solve at difficulty %d: %v", d, err)
	}
	if got := challenge.LeadingZeroBits(r.Challenge, r.Nonce); got < d {
		b.fail("nonce %q has %d leading zero bits, want %d", r.Nonce, got, d)
	}
	return r
}

// quantile of sorted values, by linear interpolation.
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[i]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

// newPowBrowser is newBrowser for a measurement: the same browser, with
// a test timeout long enough for the slow difficulties.
func newPowBrowser(t *testing.T, chromium string) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1000, 800),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	ctx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	ctx, cancelTab := chromedp.NewContext(ctx)
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		cancel()
	})
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return &browser{t: t, ctx: ctx}
}
