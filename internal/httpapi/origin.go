package httpapi

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/adapt"
)

// originReportRequest is what a site behind forward auth or the SDK says
// of its own health, for the controller (internal/adapt): its p95 latency
// (ms) and error rate (0..1) over its own recent window.
type originReportRequest struct {
	P95MS     *float64 `json:"p95_ms"`
	ErrorRate *float64 `json:"error_rate"`
}

// originReport stores the site's report for every replica (POST
// /admin/v1/queues/{queue}/origin): 204, or 400 invalid_origin_report.
func (s *Server) originReport(w http.ResponseWriter, r *http.Request) {
	if s.adapt == nil {
		s.fail(w, r, errNotFound)
		return
	}
	req, err := decode[originReportRequest](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.P95MS == nil || req.ErrorRate == nil {
		s.fail(w, r, &apiError{status: http.StatusBadRequest, code: "invalid_origin_report", message: "give p95_ms and error_rate"})
		return
	}
	rep := adapt.Report{P95: time.Duration(*req.P95MS * float64(time.Millisecond)), ErrorRate: *req.ErrorRate}
	if *req.P95MS < 0 || *req.P95MS > float64(adapt.MaxReportP95.Milliseconds()) {
		rep.P95 = -1 // out of range, whatever the conversion made of it
	}
	if err := s.adapt.Report(r.Context(), chi.URLParam(r, "queue"), rep); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
