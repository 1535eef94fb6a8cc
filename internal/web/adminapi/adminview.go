package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/waitroom/waitroom/internal/backoffice/adminauth"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The admin API's reads: the queues as the back office sees them (what
// the line does, queue.Inspector.Overview, and its settings as queue.Catalog
// lists them, queue.Inspector.Values), the settings' catalog the back office
// builds its form from, and a queue's history.

// QueueView is one queue as the back office sees it: what the
// line does now, and every setting of queue.Catalog but the private ones
// (Settings), each a JSON field named as the setting.
type QueueView struct {
	Queue string `json:"queue"`
	// Routes are the gate's routes to this queue's room, as
	// WAITROOM_GATE_ROUTES writes them ("shop.example/sale/"); "/" for the
	// room of the whole site.
	Routes        []string `json:"routes"`
	Waiting       int64    `json:"waiting"`
	Entered       int64    `json:"entered"`
	Active        int64    `json:"active"` // the same count as entered
	AbandonedLast int64    `json:"abandoned_last_interval"`
	// The last opening's draw, once made: its seed (revealed at the
	// opening), the commitment published before it and its participants,
	// with which anyone can recompute the order (docs/DRAW.md); placing
	// while its participants are being placed.
	DrawFor        string `json:"draw_for,omitempty"`
	DrawSeed       string `json:"draw_seed,omitempty"`
	DrawCommitment string `json:"draw_commitment,omitempty"`
	DrawCount      int64  `json:"draw_count,omitempty"`
	DrawPlacing    bool   `json:"draw_placing,omitempty"`
	// DrawSealed is the commitment of the draw the next opening makes
	// (its seed is never shown before the opening).
	DrawSealed         string `json:"draw_sealed,omitempty"`
	Tokens             int64  `json:"tokens"`
	SessionMaxMS       int64  `json:"session_max_ms,omitempty"` // sliding sessions' limit (WAITROOM_SESSION_MAX), when on
	LastTickAtMS       int64  `json:"last_tick_at_ms"`
	AdmittedLastMinute int64  `json:"admitted_last_minute"`
	// What the gate let through unchecked while Redis was away
	// (WAITROOM_GATE_FAIL=open), over every replica, and when it last
	// did (0: never).
	GateFailOpenRequests int64 `json:"gate_fail_open_requests"`
	GateFailOpenLastAtMS int64 `json:"gate_fail_open_last_at_ms"`
	// What an interval admits now: the effective refill while the order
	// page's health drives the rate (internal/ops/autorate), else refill_size.
	RefillEffective int `json:"refill_effective"`
	// Window is the schedule's window in force, as the tick applied it
	// (null: none); refill_effective follows it.
	Window *queue.Window `json:"window"`
	// Lines are a queue's lines when it has lanes (the general lane's
	// first, "lane" absent), each with its share and its people.
	Lines []lineView `json:"lines,omitempty"`
	// Closed: the operator closed the sale (POST .../close), at
	// closed_at, with closed_message by language and, if said,
	// reopens_at.
	Closed        bool              `json:"closed"`
	ClosedAt      string            `json:"closed_at,omitempty"`
	ClosedMessage map[string]string `json:"closed_message,omitempty"`
	ReopensAt     string            `json:"reopens_at,omitempty"`
	// Settings are the public settings by name, as the JSON shows them
	// (viewValue); absent, a time not set.
	Settings map[string]any `json:"-"`
}

// MarshalJSON is the view's fields, then its settings in catalog order.
func (aq QueueView) MarshalJSON() ([]byte, error) {
	type fields QueueView // without this method
	b, err := json.Marshal(fields(aq))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1]) // the object, open
	for _, st := range queue.Catalog {
		v, ok := aq.Settings[st.Name]
		if !ok {
			continue
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		buf.WriteString(`,"` + st.Name + `":`)
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// viewValue is a setting's value (of its Kind's Go type) as the admin view
// shows it: durations in ms, times in RFC 3339 (false: none, left out).
func viewValue(v any) (any, bool) {
	switch x := v.(type) {
	case time.Duration:
		return x.Milliseconds(), true
	case time.Time:
		return httpkit.RFC3339(x), !x.IsZero()
	}
	return v, true
}

func (s *API) Queues(w http.ResponseWriter, r *http.Request) {
	resp := struct {
		Queues []QueueView `json:"queues"`
	}{Queues: []QueueView{}}
	p, _ := adminauth.FromContext(r.Context())
	for _, q := range s.store.Queues() {
		if !p.Sees(q) {
			continue
		}
		aq, err := s.adminQueueInfo(r.Context(), q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Queues = append(resp.Queues, aq)
	}
	httpkit.WriteJSON(w, http.StatusOK, resp)
}

func (s *API) Queue(w http.ResponseWriter, r *http.Request) {
	aq, err := s.adminQueueInfo(r.Context(), chi.URLParam(r, "queue"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	httpkit.WriteJSON(w, http.StatusOK, aq)
}

// catalogEntry is one public setting of queue.Catalog as the back office
// builds its field from it (admin-settings.js).
type catalogEntry struct {
	Name    string   `json:"name"`
	Kind    string   `json:"kind"`
	Role    string   `json:"role"`
	Min     *int64   `json:"min,omitempty"` // a number's bounds, in the API's unit (ms for millis)
	Max     *int64   `json:"max,omitempty"` // (a string's bytes, a text's characters); none: unbounded
	Env     string   `json:"env,omitempty"`
	Default string   `json:"default,omitempty"`
	Form    string   `json:"form,omitempty"`
	Label   string   `json:"label,omitempty"`
	Hint    string   `json:"hint,omitempty"`
	Scale   *float64 `json:"scale,omitempty"`
}

// SettingsCatalog answers the public settings of queue.Catalog, in its
// order: the back office builds its settings form from them.
func (s *API) SettingsCatalog(w http.ResponseWriter, r *http.Request) {
	resp := struct {
		Settings []catalogEntry `json:"settings"`
	}{Settings: []catalogEntry{}}
	for _, st := range queue.Catalog {
		if !st.Private {
			resp.Settings = append(resp.Settings, newCatalogEntry(st))
		}
	}
	httpkit.WriteJSON(w, http.StatusOK, resp)
}

func newCatalogEntry(st queue.Setting) catalogEntry {
	e := catalogEntry{Name: st.Name, Kind: st.Kind.String(), Role: st.Role.String(), Env: st.Env, Default: st.Default,
		Form: st.Form, Label: st.Label, Hint: st.Hint}
	switch st.Kind {
	case queue.KindInt, queue.KindMillis:
		e.Min = &st.Min
		fallthrough
	case queue.KindURL, queue.KindString, queue.KindLine, queue.KindText:
		if st.Max != queue.Unbounded {
			e.Max = &st.Max
		}
	}
	if st.Scale != 0 && st.Scale != 1 {
		e.Scale = &st.Scale
	}
	return e
}

type HistoryPoint struct {
	AtMS      int64 `json:"at_ms"`
	Admitted  int64 `json:"admitted"`
	Waiting   int64 `json:"waiting"`
	Abandoned int64 `json:"abandoned"`
	Arrivals  int64 `json:"arrivals"` // 0 in intervals recorded before
	Active    int64 `json:"active"`   // active users at the interval's end (idem)
	// The interval's budget: refill_size, or the effective refill while
	// adapting; absent in intervals recorded before it was kept.
	RefillEffective int64 `json:"refill_effective,omitempty"`
}

// History answers a queue's history with its figures for the last ten
// minutes (JSON), or the history alone as a CSV download (?format=csv).
func (s *API) History(w http.ResponseWriter, r *http.Request) {
	q := chi.URLParam(r, "queue")
	format := r.URL.Query().Get("format")
	if format != "" && format != "json" && format != "csv" {
		s.fail(w, r, errInvalidFormat)
		return
	}
	rep, err := s.inspector.LineReport(r.Context(), q)
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
		Points           []HistoryPoint `json:"points"`
		Stats            LineStats      `json:"stats"`
		Lanes            []laneHistory  `json:"lanes,omitempty"` // a queue with lanes: each lane's own
	}{Queue: q, RefillIntervalMS: rep.Settings.RefillInterval.Milliseconds(), Points: historyPoints(rep.History),
		Stats: newLineStats(rep.Stats)}
	for _, l := range rep.Lanes {
		resp.Lanes = append(resp.Lanes, laneHistory{Lane: l.Lane, Points: historyPoints(l.History), TimeInLine: newSpread(l.TimeInLine)})
	}
	httpkit.WriteJSON(w, http.StatusOK, resp)
}

// laneHistory is one lane's history and time in line.
type laneHistory struct {
	Lane       string         `json:"lane"`
	Points     []HistoryPoint `json:"points"`
	TimeInLine spread         `json:"time_in_line"`
}

func historyPoints(history []queue.HistoryPoint) []HistoryPoint {
	points := make([]HistoryPoint, len(history))
	for i, p := range history {
		points[i] = HistoryPoint{p.At.UnixMilli(), p.Admitted, p.Waiting, p.Abandoned, p.Arrivals, p.Active, p.Refill}
	}
	return points
}

// adminQueueInfo is queue q as the back office sees it.
func (s *API) adminQueueInfo(ctx context.Context, q string) (QueueView, error) {
	o, err := s.inspector.Overview(ctx, q)
	if err != nil {
		return QueueView{}, err
	}
	aq := QueueView{
		Queue:              q,
		Routes:             s.routesOf(q),
		Waiting:            o.Waiting,
		Entered:            o.Entered,
		Active:             o.Entered,
		AbandonedLast:      o.AbandonedLastInterval,
		DrawFor:            httpkit.RFC3339(o.DrawFor),
		DrawCount:          o.DrawCount,
		DrawPlacing:        o.DrawPlacing,
		Tokens:             o.Tokens,
		SessionMaxMS:       o.Settings.SessionMax.Milliseconds(),
		AdmittedLastMinute: o.AdmittedLastMinute,
		RefillEffective:    o.RefillEffective,
		Settings:           map[string]any{},
	}
	values, err := s.inspector.Values(ctx, q)
	if err != nil {
		return QueueView{}, err
	}
	for _, st := range queue.Catalog {
		if v, ok := viewValue(values[st.Name]); ok && !st.Private {
			aq.Settings[st.Name] = v
		}
	}
	if !o.LastTickAt.IsZero() {
		aq.LastTickAtMS = o.LastTickAt.UnixMilli()
	}
	configured, _ := values["lanes"].(queue.Lanes)
	if aq.Window, aq.Lines, err = s.saleDay(ctx, q, configured); err != nil {
		return QueueView{}, err
	}
	if !o.DrawFor.IsZero() || !o.OpensAt.IsZero() {
		d, err := s.store.Draw(ctx, q)
		if err != nil {
			return QueueView{}, err
		}
		aq.DrawSealed, aq.DrawSeed, aq.DrawCommitment = d.Sealed, d.Last.Seed, d.Last.Commitment
	}
	if !o.ClosedAt.IsZero() {
		c, err := s.inspector.Closing(ctx, q)
		if err != nil {
			return QueueView{}, err
		}
		aq.Closed, aq.ClosedAt, aq.ClosedMessage, aq.ReopensAt = true, httpkit.RFC3339(o.ClosedAt), c.Message, httpkit.RFC3339(c.ReopensAt)
	}
	if s.failOpens != nil {
		rec, err := s.failOpens.Read(ctx, q)
		if err != nil {
			return QueueView{}, err
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
func (s *API) routesOf(q string) []string {
	routes := []string{}
	if s.routes == nil {
		return routes
	}
	for _, r := range s.routes() {
		if r.Queue == q {
			routes = append(routes, r.String())
		}
	}
	return routes
}
