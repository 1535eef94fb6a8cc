package agente2e

import (
	"os"
	"regexp"
	"testing"
)

// placeFarSource is the agent's copy of the line's arithmetic, cut from its
// source: the agent imports nothing, so it carries line-math.js's steps.
var placeFarSource = regexp.MustCompile(`(?s)\n  function placeFar\(doc, seq, ageMs\) \{\n.*?\n  \}\n`)

// The agent places itself far back exactly as the waiting page does
// (web/static/line-math.js, which e2e's TestLineMathMatchesServer holds to
// the server's arithmetic): over generated lines, arrival numbers in and
// around them and ages across ticks, the same position and wait, or the
// same "ask the origin".
func TestAgentLineMathMatchesPage(t *testing.T) {
	src, err := os.ReadFile("../../../web/agent/waitroom.js")
	if err != nil {
		t.Fatal(err)
	}
	fn := placeFarSource.Find(src)
	if fn == nil {
		t.Fatal("no placeFar in web/agent/waitroom.js")
	}
	s := newSite(t, still)
	b := newBrowser(t)
	tb := b.tab(s.wr + "/q/" + s.queue)
	tb.waitJS("the page", `document.readyState === 'complete'`)
	type result struct {
		Cases, Placed, Differ int
		First                 string
	}
	r := evalAsync[result](tb, `(async () => {
  const lm = await import('/_waitroom/static/line-math.js');
  const agentPlace = (function () {`+string(fn)+` return placeFar; })();
  let x = 39;
  const rnd = (n) => { x = (x * 1103515245 + 12345) % 2147483648; return x % n; };
  const out = { Cases: 0, Placed: 0, Differ: 0, First: '' };
  for (let i = 0; i < 400; i++) {
    const n = 2 + rnd(40);
    const samples = [];
    let rank = rnd(50), seq = 1 + rnd(1000);
    for (let k = 0; k < n; k++) {
      samples.push([rank, seq]);
      rank += 1 + rnd(500);
      seq += 1 + rnd(800);
    }
    const doc = {
      samples: samples, complete: rnd(10) > 0, in_draw: rnd(20) === 0,
      held_max: rnd(4) === 0 ? samples[rnd(n)][1] : 0,
      near_head: rnd(200), tick_reach: rnd(30), refill_size: rnd(8) === 0 ? 0 : 1 + rnd(100),
      refill_interval_ms: [1000, 5000, 60000][rnd(3)], until_next_tick_ms: rnd(5000),
    };
    for (let j = 0; j < 12; j++) {
      const arrival = samples[0][1] - 5 + rnd(seq - samples[0][1] + 10);
      const age = rnd(3) === 0 ? 0 : rnd(200000);
      const a = JSON.stringify(agentPlace(doc, arrival, age));
      const p = JSON.stringify(lm.place(doc, arrival, age));
      out.Cases++;
      if (p !== 'null') out.Placed++;
      if (a !== p) {
        out.Differ++;
        if (!out.First) out.First = JSON.stringify({ doc, arrival, age, agent: a, page: p });
      }
    }
  }
  return out;
})()`)
	t.Logf("%d cases, %d placed far back, %d differ", r.Cases, r.Placed, r.Differ)
	if r.Differ > 0 || r.Placed < r.Cases/4 {
		t.Fatalf("%d of %d cases differ (%d placed); the first: %s", r.Differ, r.Cases, r.Placed, r.First)
	}
}
