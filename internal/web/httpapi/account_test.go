package httpapi

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// One account holds one place per queue: a join token for a line other
// than the one holding the account's place is answered 409
// place_in_other_line naming that line, changes nothing, and leaves the
// place cookie as it was; the same line's token is the usual re-entry.
func TestJoinPlaceInOtherLine(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{Join: newJoin(t)})
	lanes := queue.Lanes{{Name: "priority", Share: 0.3}}
	if err := queue.NewInspector(e.store).UpdateSettings(context.Background(), e.queue, queue.Update{Lanes: &lanes}); err != nil {
		t.Fatal(err)
	}
	e.enterAnon()
	e.enterAnon() // the two tokens: everyone after waits
	enter := "/api/v1/queues/" + e.queue + "/enter"
	token := func(sub, lane string) string {
		c := jwt.MapClaims{"sub": sub, "aud": e.queue, "exp": time.Now().Add(time.Hour).Unix()}
		if lane != "" {
			c["lane"] = lane
		}
		return `{"join_token":"` + mintJoin(t, jwt.SigningMethodHS256, []byte(joinSecret), c) + `"}`
	}
	for _, tc := range []struct{ sub, first, second string }{{"carol", "", "priority"}, {"dave", "priority", ""}} {
		r := e.do("POST", enter, token(tc.sub, tc.first))
		held := decodeTicket(t, r)
		c := placeCookie(t, r, e.queue)
		refused := e.do("POST", enter, token(tc.sub, tc.second), "Cookie", c.Name+"="+c.Value)
		wantError(t, refused, 409, "place_in_other_line")
		var body struct {
			Error struct {
				Lane *string `json:"lane"`
			} `json:"error"`
		}
		if err := json.Unmarshal(refused.body, &body); err != nil || body.Error.Lane == nil || *body.Error.Lane != tc.first {
			t.Fatalf("%s: body %s, want lane %q", tc.sub, refused.body, tc.first)
		}
		if len(refused.header.Values("Set-Cookie")) != 0 {
			t.Fatalf("%s: the refusal set cookies %v", tc.sub, refused.header.Values("Set-Cookie"))
		}
		if st := decodeTicket(t, e.statusOf("Cookie", c.Name+"="+c.Value)); st.Status != queue.Waiting || st.Position != held.Position {
			t.Fatalf("%s: the place after the refusal: %+v, was %+v", tc.sub, st, held)
		}
		again := decodeTicket(t, e.do("POST", enter, token(tc.sub, tc.first)))
		if again.UserID != held.UserID || again.Position != held.Position {
			t.Fatalf("%s: again in its own line: %+v, was %+v", tc.sub, again, held)
		}
	}
	lines, err := queue.NewInspector(e.store).Lines(context.Background(), e.queue)
	if err != nil {
		t.Fatal(err)
	}
	if lines[0].Waiting != 1 || lines[1].Waiting != 1 {
		t.Fatalf("lines %+v, want one place in each", lines)
	}
}
