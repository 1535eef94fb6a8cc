package agente2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/demo"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/humancheck"
	"github.com/waitroom/waitroom/internal/trust/humancheck/humanchecktest"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/web/httpapi"
)

// A queue that asks everyone for a human check: the agent draws the
// provider's widget in its dialog (slotted from the shop's page, whose
// policy allows the widget), asks in the person's words, says so when a
// token is refused and draws it afresh, and takes the place once one is
// accepted. The stand-in provider checks the token was solved on the
// shop's host, so the room's hosts must name the site's.
func TestHumanCheckInTheDialog(t *testing.T) {
	sp := humanchecktest.NewServer(t)
	sp.SetHostname("") // the widget's page's host: the shop's
	checker, err := humancheck.New(sp.Options(humancheck.Turnstile, "localhost"), redistest.Client(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := newSiteFull(t, still, demo.ShopOptions{Widget: []string{strings.TrimSuffix(sp.ScriptURL, "/widget.js")}}, siteExtras{
		store: []queue.Option{queue.WithHumanCheck(checker.Available)},
		api:   func(o *httpapi.Options) { o.Human = checker },
	})
	s.fill(1) // before the check: the store's enters bring no token
	always := queue.HumanAlways
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{HumanCheck: &always}); err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t)
	sp.SetMode(humanchecktest.Refuse) // the first token is refused
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
	tb.click(`#book`)
	const button = `document.querySelector('[data-waitroom-agent] .standin-human-button')`
	tb.waitJS("the widget in the dialog", fmt.Sprintf(`%s && !!%s && !%s.disabled`, dialogOpen, button, button))
	if got := tb.text(agentText("status")); got != "Please confirm you are a person to join the line." {
		t.Errorf("the dialog asks %q", got)
	}
	if shown := eval[bool](tb, `!document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById('human').hidden`); !shown {
		t.Error("the human check's box is hidden")
	}
	eval[bool](tb, button+`.click() || true`)
	tb.waitJS("the refusal said", fmt.Sprintf(`%s === 'That check did not go through. Please try it again.'`, agentText("status")))
	tb.waitJS("the widget drawn afresh", fmt.Sprintf(`!!%s && !%s.disabled`, button, button))

	sp.SetMode(humanchecktest.Accept)
	eval[bool](tb, button+`.click() || true`)
	tb.waitJS("a place after the check", fmt.Sprintf(`%s && %s === '2'`, dialogOpen, agentText("position")))
	if !eval[bool](tb, `document.querySelector('[data-waitroom-agent]').shadowRoot.getElementById('human').hidden`) {
		t.Error("the human check still shows with a place")
	}
	var codes []int
	s.mu.Lock()
	for _, c := range s.calls {
		if c.method == "POST" && strings.HasSuffix(c.path, "/enter") {
			codes = append(codes, c.status)
		}
	}
	s.mu.Unlock()
	if !slices.Equal(codes, []int{403, 403, 200}) {
		t.Errorf("the agent's enters were answered %v, want [403 403 200]: required, failed, placed", codes)
	}
	if sp.Calls() != 2 {
		t.Errorf("the provider verified %d tokens, want 2", sp.Calls())
	}
}

// A site's join token naming a lane puts the agent's place in that lane:
// the member is the lane's ("l:<lane>:<sub>"), the dialog shows its number
// in the lane's own line (not behind the general line), and the turn
// comes from the lane's share.
func TestJoinTokenLane(t *testing.T) {
	secret := secret()
	join, err := place.NewJoin(secret)
	if err != nil {
		t.Fatal(err)
	}
	settings := still
	settings.Lanes = queue.Lanes{{Name: "members", Share: 0.5}}
	s := newSiteFull(t, settings, demo.ShopOptions{}, siteExtras{api: func(o *httpapi.Options) { o.Join = join }})
	s.fill(3) // the general line
	token := laneJoinToken(t, secret, s.queue, "user-42", "members")

	b := newBrowser(t)
	tb := b.tab(s.shop + "/")
	tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
	// As a site whose signed-in user books: the page's agent, with the token.
	eval[bool](tb, fmt.Sprintf(`(() => { window.__joined = import(document.querySelector('meta[name="waitroom-agent"]').content)
		.then((m) => m.wait({ queue: %q, joinToken: %q })).then((r) => 'pass:' + !!r.pass, (e) => 'error:' + e.code); return true; })()`, s.queue, token))
	tb.waitJS("number 1 in the lane", fmt.Sprintf(`%s && %s === '1'`, dialogOpen, agentText("position")))
	member := queue.LaneMember("members", "user-42")
	tk, err := s.store.Status(context.Background(), s.queue, queue.Caller{User: member})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != queue.Waiting || tk.Position != 1 {
		t.Fatalf("the lane's member %s: %+v, want waiting at 1", member, tk)
	}
	if w := s.waiting(); w != 4 {
		t.Errorf("%d waiting in all, want 4: the three ahead and the lane's one", w)
	}
	// One tick at a refill of 2: the lane's share admits its one.
	two := 2
	if err := queue.NewInspector(s.store).UpdateSettings(context.Background(), s.queue, queue.Update{RefillSize: &two}); err != nil {
		t.Fatal(err)
	}
	s.tickOnce()
	if got := evalAsync[string](tb, `window.__joined`); got != "pass:true" {
		t.Fatalf("wait: %s", got)
	}
	if w := s.waiting(); w < 2 {
		t.Errorf("%d waiting after the tick: the general line went before the lane", w)
	}
}

// laneJoinToken is a site's join token for sub in q's lane.
func laneJoinToken(t *testing.T, secret []byte, q, sub, lane string) string {
	t.Helper()
	now := time.Now()
	claims := struct {
		jwt.RegisteredClaims
		Lane string `json:"lane"`
	}{jwt.RegisteredClaims{Subject: sub, Audience: jwt.ClaimStrings{q}, IssuedAt: jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(10 * time.Minute))}, lane}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
