package adminapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/changes"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// closeRequest is POST .../close's body: the message by language tag,
// and optionally when sales reopen (RFC 3339; told, not acted on).
type closeRequest struct {
	Message   map[string]string `json:"message"`
	ReopensAt *string           `json:"reopens_at"`
}

// closing is the queue.Closing a close body asks for; a reopens_at that
// is not RFC 3339 is refused as a field (queue.Closing.Validate judges
// the rest).
func (c closeRequest) closing() (queue.Closing, error) {
	out := queue.Closing{Message: c.Message}
	if c.ReopensAt != nil && *c.ReopensAt != "" {
		t, err := time.Parse(time.RFC3339, *c.ReopensAt)
		if err != nil {
			return out, &queue.FieldError{Field: "reopens_at", Err: errRFC3339}
		}
		out.ReopensAt = t
	}
	return out, out.Validate(time.Now())
}

var errRFC3339 = errorString("must be an RFC 3339 time")

type errorString string

func (e errorString) Error() string { return string(e) }

// CloseSale closes a queue's sale (sold out): new enters are refused with
// the message, everyone waiting is told, admissions are kept. Answers the
// queue as the back office sees it.
func (s *API) CloseSale(w http.ResponseWriter, r *http.Request) {
	req, err := httpkit.Decode[closeRequest](w, r)
	var c queue.Closing
	if err == nil {
		c, err = req.closing()
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.applySale(w, r, &c)
}

// ReopenSale undoes CloseSale: enters are taken again. An empty body.
func (s *API) ReopenSale(w http.ResponseWriter, r *http.Request) {
	s.applySale(w, r, nil)
}

func (s *API) applySale(w http.ResponseWriter, r *http.Request, c *queue.Closing) {
	sale := &changes.Sale[QueueView]{Store: s.inspector, Audit: s.admin.audit, View: s.adminQueueInfo}
	aq, err := sale.Apply(r.Context(), changes.SaleChange{Queue: chi.URLParam(r, "queue"), Closing: c, Who: s.auditWho(r), Log: s.logger(r)})
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, aq)
}
