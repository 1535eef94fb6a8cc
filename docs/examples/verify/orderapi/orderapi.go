// Package orderapi is the Go verification example (docs/examples/verify):
// an order page's API behind waitroom's Go middleware, which takes the
// pass the site's own calls send (Authorization: Bearer or
// X-Waitroom-Pass), checks it against the waitroom's JWKS and, for
// revocation, its verify endpoint, and carries the page's
// Waitroom-Command back to the waitroom.
package orderapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/waitroom/waitroom/gate"
)

// New returns the order API of queue behind the gate of the waitroom at
// waitroomURL (its public address, e.g. https://waitroom.example) whose
// passes name issuer (its WAITROOM_ISSUER). ctx bounds the gate's
// refreshing of the keys.
func New(ctx context.Context, waitroomURL, issuer, queue string) (http.Handler, error) {
	g, err := gate.New(ctx, gate.Options{
		Queue:      queue,
		Issuer:     issuer,
		JWKSURL:    waitroomURL + "/.well-known/jwks.json",
		VerifyURL:  waitroomURL + "/api/v1/verify",
		CommandURL: waitroomURL + "/api/v1/queues/{queue}/commands",
		// No WaitingPage: an API answers 401 JSON, and the site's agent
		// sends the user to wait.
	})
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/book", func(w http.ResponseWriter, r *http.Request) {
		c, _ := gate.FromContext(r.Context())
		w.Header().Set("Content-Type", "application/json")
		// Booked: this admission is over, the slot goes to the next person.
		w.Header().Set(gate.HeaderCommand, gate.CommandDone)
		_ = json.NewEncoder(w).Encode(map[string]string{"booked_for": c.Subject})
	})
	return g.Handler(mux), nil
}
