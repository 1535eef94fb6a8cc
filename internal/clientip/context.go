package clientip

import (
	"context"
	"net/netip"
)

type ctxKey struct{}

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
