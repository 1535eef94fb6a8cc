package adminapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/ops/forecast"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// Sale days: a queue's schedule of windows, and the forecast
// of a refill size before it is set.

// lineView is one of a queue's lines in the admin view.
type lineView struct {
	Lane    string  `json:"lane,omitempty"` // absent: the general lane
	Share   float64 `json:"share"`
	Waiting int64   `json:"waiting"`
}

// saleDay is the admin view's part of a sale day: the window in force and,
// for a queue with lanes configured, each line (a queue without reads no
// lines: the view is asked every few seconds per queue; a lane removed
// while people wait in it is in the queue's waiting and its history).
func (s *API) saleDay(ctx context.Context, q string, configured queue.Lanes) (*queue.Window, []lineView, error) {
	_, window, err := s.inspector.Schedule(ctx, q)
	if err != nil || len(configured) == 0 {
		return window, nil, err
	}
	lines, err := s.inspector.Lines(ctx, q)
	if err != nil || len(lines) < 2 {
		return window, nil, err
	}
	views := make([]lineView, len(lines))
	for i, l := range lines {
		views[i] = lineView{Lane: l.Lane, Share: l.Share, Waiting: l.Waiting}
	}
	return window, views, nil
}

type scheduleResponse struct {
	Windows []queue.Window `json:"windows"`
	// Window is the window in force, as the tick applied it (null: none).
	Window *queue.Window `json:"window"`
}

// Schedule answers the queue's windows and the one in force.
func (s *API) Schedule(w http.ResponseWriter, r *http.Request) {
	sc, inForce, err := s.inspector.Schedule(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, scheduleResponse{Windows: sc.Windows, Window: inForce})
}

// PutSchedule replaces the queue's windows (audited as "schedule") and
// answers them with the one in force.
func (s *API) PutSchedule(w http.ResponseWriter, r *http.Request) {
	req, err := httpkit.Decode[queue.Schedule](w, r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	q := chi.URLParam(r, "queue")
	before, inForce, err := s.inspector.SetSchedule(r.Context(), q, req)
	if errors.Is(err, queue.ErrInvalidSchedule) {
		err = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_schedule", Message: httpkit.ClientMessage(err)}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if req.Windows == nil {
		req.Windows = []queue.Window{}
	}
	s.record(r, q, "schedule", "", []audit.Change{{Field: "windows", Old: audit.Value(before.Windows), New: audit.Value(req.Windows)}})
	httpkit.WriteJSON(w, http.StatusOK, scheduleResponse{Windows: req.Windows, Window: inForce})
}

var errInvalidForecast = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_forecast",
	Message: "refill_size must be an integer from 1 to 100000, and lane one of the queue's lanes"}

// Forecast answers what refill_size would do to the line (or, with
// lane, to that lane) as it is now, within the caller's limit of
// forecasts (429 rate_limited past it).
func (s *API) Forecast(w http.ResponseWriter, r *http.Request) {
	refill, err := strconv.Atoi(r.URL.Query().Get("refill_size"))
	st, _ := queue.Lookup("refill_size")
	if err != nil || st.Check(refill) != nil {
		s.fail(w, r, errInvalidForecast)
		return
	}
	p, _ := adminauth.FromContext(r.Context())
	res, err := s.forecasts.Forecast(r.Context(), p.Actor.String(), chi.URLParam(r, "queue"), refill, r.URL.Query().Get("lane"))
	if errors.Is(err, forecast.ErrUnknownLane) {
		err = errInvalidForecast
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, res)
}
