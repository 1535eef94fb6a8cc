// Package adminauth says what an operator of the back office may do:
// the three roles, the queues a grant covers, and who a signed-in
// request stands for (Principal). It keeps no state: the credentials
// that make a Principal live in internal/backoffice/apitoken (API tokens) and
// internal/backoffice/adminsession (people signed in through OpenID Connect), and
// httpapi's guard checks the break-glass WAITROOM_ADMIN_TOKEN.
package adminauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/waitroom/waitroom/internal/backoffice/actor"
	"github.com/waitroom/waitroom/internal/engine/queue"
)

// Role is what a grant lets its holder do. Each role may do what the
// ones below it may.
type Role int

const (
	// Viewer reads: queues, history, CSV, audit, the settings' catalog.
	Viewer Role = iota + 1
	// Operator also changes the live settings of the queues it covers
	// (refill, pause, opening, texts, defences) and removes users.
	Operator
	// Admin also manages tokens, sessions, webhooks and probes, on every
	// queue.
	Admin
)

// ErrInvalidRole is a role name that is not viewer, operator or admin.
var ErrInvalidRole = errors.New("adminauth: role must be viewer, operator or admin")

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return Viewer, nil
	case "operator":
		return Operator, nil
	case "admin":
		return Admin, nil
	}
	return 0, ErrInvalidRole
}

func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) {
	if r < Viewer || r > Admin {
		return nil, ErrInvalidRole
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	v, err := ParseRole(string(b))
	*r = v
	return err
}

// Grant is a role on some queues: every queue when Queues is empty. An
// admin grant always covers every queue.
type Grant struct {
	Role   Role     `json:"role"`
	Queues []string `json:"queues"`
}

// MarshalJSON writes every queue as [], never null.
func (g Grant) MarshalJSON() ([]byte, error) {
	type plain Grant
	if g.Queues == nil {
		g.Queues = []string{}
	}
	return json.Marshal(plain(g))
}

// covers reports whether g's queues include q.
func (g Grant) covers(q string) bool {
	return g.Role == Admin || len(g.Queues) == 0 || slices.Contains(g.Queues, q)
}

// ErrInvalidQueues is a grant naming a queue badly, or an admin grant
// naming queues (an admin covers every queue).
var ErrInvalidQueues = errors.New("adminauth: queues must be names of [A-Za-z0-9_-], at most 64 bytes each, and none for an admin")

// MaxQueues is the most queues one grant may name.
const MaxQueues = 64

// Check reports whether g is well formed.
func (g Grant) Check() error {
	if g.Role < Viewer || g.Role > Admin {
		return ErrInvalidRole
	}
	if g.Role == Admin && len(g.Queues) > 0 || len(g.Queues) > MaxQueues {
		return ErrInvalidQueues
	}
	for _, q := range g.Queues {
		if queue.ValidateQueueName(q) != nil {
			return ErrInvalidQueues
		}
	}
	return nil
}

// Principal is who a request to the admin API stands for, and what they
// may do: the union of their grants.
type Principal struct {
	Actor  actor.Actor
	Grants []Grant
	// Session is the id of the person's sign-in (KindOIDC), for signing
	// out; "" for tokens.
	Session string
}

// Role is the highest role any of p's grants gives.
func (p Principal) Role() Role {
	var r Role
	for _, g := range p.Grants {
		r = max(r, g.Role)
	}
	return r
}

// Allows reports whether p may act as role on queue q ("" for an action
// of no queue: then only a grant of every queue counts).
func (p Principal) Allows(role Role, q string) bool {
	for _, g := range p.Grants {
		if g.Role < role {
			continue
		}
		if q == "" && (g.Role == Admin || len(g.Queues) == 0) || q != "" && g.covers(q) {
			return true
		}
	}
	return false
}

// Sees reports whether p may read queue q at all.
func (p Principal) Sees(q string) bool { return p.Allows(Viewer, q) }

type ctxKey struct{}

// NewContext returns ctx carrying p (and p's actor, for actor.FromContext).
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(actor.NewContext(ctx, p.Actor), ctxKey{}, p)
}

// FromContext is the principal ctx carries; false when none.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(Principal)
	return p, ok
}

// Mapping turns an identity provider's groups into grants
// (WAITROOM_OIDC_ROLES).
type Mapping map[string][]Grant

// ParseMapping reads "group=role[:queue|queue...]" entries, comma
// separated, e.g. "wr-admin=admin,wr-ops=operator:sale|refund,wr-view=viewer".
// A group may appear more than once; its grants add up.
func ParseMapping(s string) (Mapping, error) {
	m := Mapping{}
	for _, entry := range strings.Split(s, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		group, spec, ok := strings.Cut(entry, "=")
		group = strings.TrimSpace(group)
		if !ok || group == "" {
			return nil, fmt.Errorf("adminauth: %q: want group=role[:queue|queue...]", entry)
		}
		roleName, queues, scoped := strings.Cut(strings.TrimSpace(spec), ":")
		role, err := ParseRole(roleName)
		if err != nil {
			return nil, fmt.Errorf("adminauth: %q: %w", entry, err)
		}
		g := Grant{Role: role}
		if scoped {
			g.Queues = strings.Split(queues, "|")
		}
		if err := g.Check(); err != nil {
			return nil, fmt.Errorf("adminauth: %q: %w", entry, err)
		}
		m[group] = append(m[group], g)
	}
	if len(m) == 0 {
		return nil, errors.New("adminauth: no group is mapped to a role")
	}
	return m, nil
}

// Grants are the grants of a person in groups; none when no group is
// mapped.
func (m Mapping) Grants(groups []string) []Grant {
	var out []Grant
	for _, g := range groups {
		out = append(out, m[g]...)
	}
	return out
}
