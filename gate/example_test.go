package gate_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waitroom/waitroom/gate"
)

// An order page behind the gate: only holders of a valid pass for the
// queue get in, and the handler knows who they are.
func Example() {
	room := newWaitroom(exampleTB{}) // a waitroom's JWKS and verify endpoint, for the example

	ctx := context.Background()
	g, err := gate.New(ctx, gate.Options{
		Queue:       "default",
		Issuer:      "https://waitroom.test",
		JWKSURL:     room.srv.URL + "/.well-known/jwks.json",
		VerifyURL:   room.srv.URL + "/api/v1/verify",
		WaitingPage: "https://waitroom.test/q/default",
	})
	if err != nil {
		log.Fatal(err)
	}
	orderPage := g.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _ := gate.FromContext(r.Context())
		fmt.Fprintf(w, "welcome, %s", c.Subject)
	}))

	// A browser without a pass goes to the waiting room.
	w := httptest.NewRecorder()
	orderPage.ServeHTTP(w, httptest.NewRequest("GET", "/order", nil))
	fmt.Println(w.Code, w.Header().Get("Location"))

	// One with a pass gets in.
	r := httptest.NewRequest("GET", "/order", nil)
	r.AddCookie(&http.Cookie{Name: gate.CookieName("default", true), Value: room.issue(exampleTB{}, "default", time.Now().Add(time.Hour))})
	w = httptest.NewRecorder()
	orderPage.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body)
	// Output:
	// 303 https://waitroom.test/q/default
	// 200 welcome, a:holder
}

// exampleTB lets the test helpers run in an Example, which has no *testing.T.
type exampleTB struct{}

func (exampleTB) Cleanup(func())    {}
func (exampleTB) Fatal(args ...any) { log.Fatal(args...) }
