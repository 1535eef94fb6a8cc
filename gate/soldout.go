package gate

import "net/http"

// SoldOut shows the sold-out page of a room whose sale the operator has
// closed (waitroom's POST /admin/v1/queues/{queue}/close): while it is
// closed, a request without a valid pass gets that page (or, from a
// script, its JSON) instead of being sent into a line that takes nobody.
// A valid pass still goes through: admitted people keep their session.
type SoldOut interface {
	// ServeSoldOut answers r, a request for queue's room without a valid
	// pass, and reports true while queue's sale is closed; it writes
	// nothing and reports false when the sale is open or it cannot tell
	// (the gate then refuses r as usual). It is asked on the refusal
	// path only, so what it knows should be at hand (a cached view of
	// the queue), not fetched per request.
	ServeSoldOut(w http.ResponseWriter, r *http.Request, queue string) bool
}

// soldOut answers r with its room's sold-out page when the gate has a
// SoldOut and the room's sale is closed.
func (g *Gate) soldOut(w http.ResponseWriter, r *http.Request, rm *room) bool {
	return g.sold != nil && g.sold.ServeSoldOut(w, r, rm.queue)
}
