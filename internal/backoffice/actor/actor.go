// Package actor names who made a change: a person signed in through the
// company's identity provider, an API token, the break-glass admin
// token, the schedule or the automatic rate. The audit log, the
// settings_changed webhook and the back office all show the same value.
package actor

import (
	"context"
	"encoding/json"
)

// The kinds of actor.
const (
	// KindOIDC is a person signed in through OpenID Connect; Name is
	// their e-mail address (or subject, without one).
	KindOIDC = "oidc"
	// KindToken is an API token; Name is the token's name.
	KindToken = "token"
	// KindAdminToken is WAITROOM_ADMIN_TOKEN, the break-glass credential.
	KindAdminToken = "admin_token"
	// KindSchedule is a scheduled change applied by the tick.
	KindSchedule = "schedule"
	// KindAutomatic is the controller that lets the order page's health
	// drive the rate (internal/ops/autorate).
	KindAutomatic = "automatic"
	// KindOrigin is the order page behind the gate, speaking back through
	// its answers' Waitroom-Command or the commands endpoint; Name is the
	// kind again (the entry's target names the admission).
	KindOrigin = "origin"
)

// AdminTokenName is the name of the break-glass credential's actor.
const AdminTokenName = "WAITROOM_ADMIN_TOKEN"

// Actor is who made a change. The zero Actor is "not known" (a change
// recorded before actors were).
type Actor struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
}

// IsZero reports whether a is not known.
func (a Actor) IsZero() bool { return a.Kind == "" && a.Name == "" }

// String is "kind:name", for log lines.
func (a Actor) String() string { return a.Kind + ":" + a.Name }

// UnmarshalJSON takes the object, and the bare string of entries written
// before actors had a name: "automatic" was the controller's.
func (a *Actor) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*a = Actor{Kind: s, Name: s}
		return nil
	}
	type plain Actor
	return json.Unmarshal(b, (*plain)(a))
}

type ctxKey struct{}

// NewContext returns ctx carrying a.
func NewContext(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// FromContext is the actor ctx carries, or the zero Actor.
func FromContext(ctx context.Context) Actor {
	a, _ := ctx.Value(ctxKey{}).(Actor)
	return a
}
