package adminapi

import (
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// originReportRequest is what a site behind forward auth or the SDK says
// of its own health, for the controller (internal/ops/autorate): its p95 latency
// (ms) and error rate (0..1) over its own recent window.
type originReportRequest struct {
	P95MS     *float64 `json:"p95_ms"`
	ErrorRate *float64 `json:"error_rate"`
}

var errOriginReport = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_origin_report",
	Message: "give p95_ms (0 to 600000) and error_rate (0 to 1)"}

// OriginReport stores the site's report for every replica (POST
// /admin/v1/queues/{queue}/origin): 204, or 400 invalid_origin_report.
func (s *API) OriginReport(w http.ResponseWriter, r *http.Request) {
	if s.adapt == nil {
		s.fail(w, r, httpkit.ErrNotFound)
		return
	}
	body, err := httpkit.ReadBody(w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rep, err := originReportOf(body)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if err := s.adapt.Report(r.Context(), chi.URLParam(r, "queue"), rep); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// originReportOf reads a report's body: invalid_json when it is not one
// object of the two fields, invalid_origin_report when one is missing or
// out of range.
func originReportOf(body []byte) (autorate.Report, error) {
	req, err := httpkit.Unmarshal[originReportRequest](body)
	if err != nil {
		return autorate.Report{}, err
	}
	if req.P95MS == nil || req.ErrorRate == nil || !(*req.P95MS >= 0 && *req.P95MS <= float64(autorate.MaxReportP95.Milliseconds())) {
		return autorate.Report{}, errOriginReport
	}
	rep := autorate.Report{P95: time.Duration(*req.P95MS * float64(time.Millisecond)), ErrorRate: *req.ErrorRate}
	if errors.Is(rep.Validate(), autorate.ErrInvalidReport) {
		return autorate.Report{}, errOriginReport
	}
	return rep, nil
}
