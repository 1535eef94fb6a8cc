package gate

// What the gate tells the handler behind it of a request it let in.

import (
	"context"
	"time"
)

// Claims are what a valid pass says about its holder.
type Claims struct {
	Queue   string    // the queue the pass admits to (aud)
	Subject string    // the member id holding the admission (sub)
	ID      string    // the pass's unique id (jti)
	Expires time.Time // when the admission ends at the latest (exp)
}

type ctxKey struct{}

// admission is what the gate puts in the context of a request it let in.
type admission struct {
	claims Claims
	token  string
}

// FromContext returns the claims of the pass that let the request in.
func FromContext(ctx context.Context) (Claims, bool) {
	a, ok := ctx.Value(ctxKey{}).(admission)
	return a.claims, ok
}

// PassFromContext returns the pass that let the request in, exactly as it
// was checked: an order page that forwards it (to waitroom's done
// endpoint, say) takes it from here.
func PassFromContext(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(ctxKey{}).(admission)
	return a.token, ok
}
