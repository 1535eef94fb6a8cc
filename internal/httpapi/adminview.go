package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// The admin API's reads: the queues as the back office sees them, and a
// queue's history. Each is one store call (queue.Store.Overview).

// adminQueueResponse is one queue as the back office sees it.
type adminQueueResponse struct {
	Queue string `json:"queue"`
	// Routes are the gate's routes to this queue's room, as
	// WAITROOM_GATE_ROUTES writes them ("shop.example/sale/"); "/" for the
	// room of the whole site.
	Routes     []string `json:"routes"`
	Waiting    int64    `json:"waiting"`
	Entered    int64    `json:"entered"`
	Active     int64    `json:"active"` // the same count as entered
	MaxActive  int      `json:"max_active"`
	MaxWaiting int      `json:"max_waiting"` // the line's cap (0: none)
	// The proof of work asked before entering, in leading zero bits (0: none).
	ChallengeDifficulty int `json:"challenge_difficulty"`
	// Title and Message are the queue's text on its waiting page, by
	// language; {} when none.
	Title          map[string]string `json:"title"`
	Message        map[string]string `json:"message"`
	Paused         bool              `json:"paused"`
	AbandonAfterMS int64             `json:"abandon_after_ms"`
	AbandonedLast  int64             `json:"abandoned_last_interval"`
	OpensAt        string            `json:"opens_at,omitempty"`      // a scheduled opening, RFC 3339
	PrequeueFrom   string            `json:"prequeue_from,omitempty"` // its pre-queue window's start
	// The last opening's draw, once made: its seed and participants, with
	// which anyone can recompute the order (README, "Scheduled opening").
	DrawFor            string `json:"draw_for,omitempty"`
	DrawSeed           int64  `json:"draw_seed,omitempty"`
	DrawCount          int64  `json:"draw_count,omitempty"`
	Tokens             int64  `json:"tokens"`
	RefillSize         int    `json:"refill_size"`
	RefillIntervalMS   int64  `json:"refill_interval_ms"`
	SessionTTLMS       int64  `json:"session_ttl_ms"`
	SessionMaxMS       int64  `json:"session_max_ms,omitempty"` // sliding sessions' limit (WAITROOM_SESSION_MAX), when on
	LastTickAtMS       int64  `json:"last_tick_at_ms"`
	AdmittedLastMinute int64  `json:"admitted_last_minute"`
	// What the gate let through unchecked while Redis was away
	// (WAITROOM_GATE_FAIL=open), over every replica, and when it last
	// did (0: never).
	GateFailOpenRequests int64 `json:"gate_fail_open_requests"`
	GateFailOpenLastAtMS int64 `json:"gate_fail_open_last_at_ms"`
	// The order page's health driving the rate (internal/autorate): its
	// settings, and what an interval admits now (refill_size while off).
	AdaptEnabled       bool    `json:"adapt_enabled"`
	OriginTargetP95MS  int64   `json:"origin_target_p95_ms"`
	OriginMaxErrorRate float64 `json:"origin_max_error_rate"`
	MinRefillSize      int     `json:"min_refill_size"`
	OriginProbeURL     string  `json:"origin_probe_url"`
	RefillEffective    int     `json:"refill_effective"`
}

func (s *Server) adminQueues(w http.ResponseWriter, r *http.Request) {
	var resp struct {
		Queues []adminQueueResponse `json:"queues"`
	}
	for _, q := range s.store.Queues() {
		aq, err := s.adminQueueInfo(r.Context(), q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Queues = append(resp.Queues, aq)
	}
	writeJSON(w, http.StatusOK, resp)
}

func (s *Server) adminQueue(w http.ResponseWriter, r *http.Request) {
	aq, err := s.adminQueueInfo(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, aq)
}

type historyPoint struct {
	AtMS      int64 `json:"at_ms"`
	Admitted  int64 `json:"admitted"`
	Waiting   int64 `json:"waiting"`
	Abandoned int64 `json:"abandoned"`
	Arrivals  int64 `json:"arrivals"` // issue 22: 0 in intervals recorded before
	Active    int64 `json:"active"`   // active users at the interval's end (idem)
	// The interval's budget: refill_size, or the effective refill while
	// adapting; absent in intervals recorded before it was kept.
	RefillEffective int64 `json:"refill_effective,omitempty"`
}

// history answers a queue's history with its figures for the last ten
// minutes (JSON), or the history alone as a CSV download (?format=csv).
func (s *Server) history(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "csv" {
		s.fail(w, r, errInvalidFormat)
		return
	}
	rep, err := s.store.LineReport(r.Context(), q)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if format == "csv" {
		writeHistoryCSV(w, q, rep.History)
		return
	}
	resp := struct {
		Queue            string         `json:"queue"`
		RefillIntervalMS int64          `json:"refill_interval_ms"`
		Points           []historyPoint `json:"points"`
		Stats            lineStats      `json:"stats"`
	}{Queue: q, RefillIntervalMS: rep.Settings.RefillInterval.Milliseconds(), Points: make([]historyPoint, len(rep.History)),
		Stats: newLineStats(rep.Stats)}
	for i, p := range rep.History {
		resp.Points[i] = historyPoint{p.At.UnixMilli(), p.Admitted, p.Waiting, p.Abandoned, p.Arrivals, p.Active, p.Refill}
	}
	writeJSON(w, http.StatusOK, resp)
}

// adminQueueInfo is queue q as the back office sees it.
func (s *Server) adminQueueInfo(ctx context.Context, q string) (adminQueueResponse, error) {
	o, err := s.store.Overview(ctx, q)
	if err != nil {
		return adminQueueResponse{}, err
	}
	aq := adminQueueResponse{
		Queue:               q,
		Routes:              s.routesOf(q),
		Waiting:             o.Waiting,
		Entered:             o.Entered,
		Active:              o.Entered,
		MaxActive:           o.Settings.MaxActive,
		MaxWaiting:          o.Settings.MaxWaiting,
		Paused:              o.Paused,
		AbandonAfterMS:      o.Settings.AbandonAfter.Milliseconds(),
		ChallengeDifficulty: o.Settings.ChallengeDifficulty,
		AbandonedLast:       o.AbandonedLastInterval,
		OpensAt:             rfc3339(o.OpensAt),
		PrequeueFrom:        rfc3339(o.PrequeueFrom),
		DrawFor:             rfc3339(o.DrawFor),
		DrawSeed:            o.DrawSeed,
		DrawCount:           o.DrawCount,
		Tokens:              o.Tokens,
		RefillSize:          o.Settings.RefillSize,
		RefillIntervalMS:    o.Settings.RefillInterval.Milliseconds(),
		SessionTTLMS:        o.Settings.SessionTTL.Milliseconds(),
		SessionMaxMS:        o.Settings.SessionMax.Milliseconds(),
		AdmittedLastMinute:  o.AdmittedLastMinute,
		RefillEffective:     o.RefillEffective,
	}
	text, err := s.store.Text(ctx, q)
	if err != nil {
		return adminQueueResponse{}, err
	}
	aq.Title, aq.Message = text.Title, text.Message
	st, err := s.store.Adapt(ctx, q)
	if err != nil {
		return adminQueueResponse{}, err
	}
	aq.AdaptEnabled = st.Enabled
	aq.OriginTargetP95MS = st.TargetP95.Milliseconds()
	aq.OriginMaxErrorRate = st.MaxErrorRate
	aq.MinRefillSize = st.MinRefill
	aq.OriginProbeURL = st.ProbeURL
	if !o.LastTickAt.IsZero() {
		aq.LastTickAtMS = o.LastTickAt.UnixMilli()
	}
	if s.failOpens != nil {
		rec, err := s.failOpens.Read(ctx, q)
		if err != nil {
			return adminQueueResponse{}, err
		}
		aq.GateFailOpenRequests = rec.Requests
		if !rec.LastAt.IsZero() {
			aq.GateFailOpenLastAtMS = rec.LastAt.UnixMilli()
		}
	}
	return aq, nil
}

// routesOf lists the gate's routes to queue q, the most specific first;
// never nil, so the answer always has the list.
func (s *Server) routesOf(q string) []string {
	routes := []string{}
	for _, r := range s.gate.Routes() {
		if r.Queue == q {
			routes = append(routes, r.String())
		}
	}
	return routes
}
