package clientip

import (
	"context"
	"net/netip"
)

type ctxKey struct{}

// ContextKey is the key NewContext stores the address under. A
// per-request context type of a server's own may answer it itself
// (httpapi's does), so that adding the address costs no copy of the
// request.
var ContextKey any = ctxKey{}

// NewContext returns ctx carrying the client address a, for code below a
// handler that judges clients by address (a shared entry pass) but is
// handed only a context.
func NewContext(ctx context.Context, a netip.Addr) context.Context {
	return context.WithValue(ctx, ctxKey{}, a)
}

// FromContext returns the client address NewContext put in ctx.
func FromContext(ctx context.Context) (netip.Addr, bool) {
	a, ok := ctx.Value(ctxKey{}).(netip.Addr)
	return a, ok
}
