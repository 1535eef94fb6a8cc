package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/hygiene/clientip"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/web/httpkit"
	"github.com/waitroom/waitroom/internal/web/publicapi"
)

// The price of a place over HTTP: a network's first place
// is free; once it holds one, an enter without a proof, or with one too
// weak for what the network must pay now, answers 403 challenge_required
// with the difficulty to bring; the challenge endpoint issues at it, for
// every address of the network (another /64 of a /56 alike), and a
// solution at it enters. Another network still enters for free.
func TestPriceOverHTTP(t *testing.T) {
	t.Parallel()
	settings := queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour, Price: queue.Price{Bits: 4}}
	trusted, _ := clientip.New([]string{"127.0.0.1/32", "::1/128"})
	e := newEnv(t, redistest.Client(t), settings, testTimeout, Options{ClientIP: trusted})
	e.enterAnon("X-Forwarded-For", "192.0.2.1") // the interval's admission: the others wait
	base := "/api/v1/queues/" + e.queue
	for _, net := range []struct{ name, first, other, next string }{
		{"/24", "203.0.113.1", "203.0.113.77", "203.0.113.%d"},
		{"/56", "2001:db8:7:100::1", "2001:db8:7:1ff::1", "2001:db8:7:1%02x::1"},
	} {
		if _, r := e.enterAnon("X-Forwarded-For", net.first); r.status != 200 {
			t.Fatalf("%s: the first place: %d %s", net.name, r.status, r.body)
		}
		var stale publicapi.ChallengeResponse // fetched before the network's last place
		for held := 1; held <= 3; held++ {
			want := queue.PriceDifficulty(4, held, 0)
			r := e.do("POST", base+"/enter", "{}", "X-Forwarded-For", net.other)
			wantError(t, r, 403, "challenge_required")
			if d := errDifficulty(t, r); d != want {
				t.Fatalf("%s holding %d: difficulty %d in the answer, want %d", net.name, held, d, want)
			}
			c := challengeAt(t, e, base, fmt.Sprintf(net.next, 2+held))
			if c.Difficulty != want {
				t.Fatalf("%s holding %d: challenge at %d, want %d", net.name, held, c.Difficulty, want)
			}
			if held > 1 {
				// Solved as asked then, too weak now: refused, with the price.
				r = e.do("POST", base+"/enter", solution(stale.Challenge, challenge.Solve(stale.Challenge, stale.Difficulty)), "X-Forwarded-For", net.other)
				wantError(t, r, 403, "challenge_required")
				if d := errDifficulty(t, r); stale.Difficulty >= want || d != want {
					t.Fatalf("%s holding %d: a proof of %d: difficulty %d in the answer, want %d", net.name, held, stale.Difficulty, d, want)
				}
			}
			stale = challengeAt(t, e, base, net.other)
			r = e.do("POST", base+"/enter", solution(c.Challenge, challenge.Solve(c.Challenge, want)), "X-Forwarded-For", net.other)
			if r.status != 200 {
				t.Fatalf("%s holding %d: a solution at %d: %d %s", net.name, held, want, r.status, r.body)
			}
		}
	}
	if c := challengeAt(t, e, base, "198.51.100.9"); c.Difficulty != 0 {
		t.Fatalf("a fresh network: challenge at %d", c.Difficulty)
	}
	if _, r := e.enterAnon("X-Forwarded-For", "198.51.100.9"); r.status != 200 {
		t.Fatalf("a fresh network: %d %s", r.status, r.body)
	}
	if n := e.waiting(); n != 1+2*4+1 {
		t.Fatalf("%d places and admissions, want the 10 let in", n)
	}
}

func errDifficulty(t *testing.T, r response) int {
	t.Helper()
	var body httpkit.ErrorBody
	if err := json.Unmarshal(r.body, &body); err != nil || body.Error.Difficulty == nil {
		t.Fatalf("no difficulty in %s (%v)", r.body, err)
	}
	return *body.Error.Difficulty
}

func challengeAt(t *testing.T, e *env, base, client string) publicapi.ChallengeResponse {
	t.Helper()
	r := e.do("GET", base+"/challenge", "", "X-Forwarded-For", client)
	var c publicapi.ChallengeResponse
	if err := json.Unmarshal(r.body, &c); err != nil || r.status != 200 {
		t.Fatalf("challenge: %d %s", r.status, r.body)
	}
	return c
}

func solution(ch, nonce string) string {
	b, _ := json.Marshal(map[string]string{"challenge": ch, "nonce": nonce})
	return string(b)
}
