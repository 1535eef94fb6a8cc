package adminapi

import (
	"encoding/csv"
	"net/http"
	"strconv"
	"time"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// What the line felt like, for the operator: the history
// endpoint's figures (queue.LineStats) as JSON, and the history as CSV.

var errInvalidFormat = &httpkit.Error{Status: http.StatusBadRequest, Code: "invalid_format", Message: "format must be json (the default) or csv", Field: "format"}

// LineStats are queue.LineStats on the wire: durations in ms.
type LineStats struct {
	WindowS             int64   `json:"window_s"`
	TimeInLine          spread  `json:"time_in_line"`
	ETAError            spread  `json:"eta_error"`
	TimeInside          spread  `json:"time_inside"`
	Arrivals            int64   `json:"arrivals"`
	Admitted            int64   `json:"admitted"`
	Abandoned           int64   `json:"abandoned"`
	AbandonmentRate     float64 `json:"abandonment_rate"`
	ArrivalsPerMinute   float64 `json:"arrivals_per_minute"`
	AdmissionsPerMinute float64 `json:"admissions_per_minute"`
	Active              int64   `json:"active"`
}

type spread struct {
	Count int64 `json:"count"`
	P50MS int64 `json:"p50_ms"`
	P90MS int64 `json:"p90_ms"`
}

func newSpread(s queue.Spread) spread {
	return spread{s.Count, s.P50.Milliseconds(), s.P90.Milliseconds()}
}

func newLineStats(st queue.LineStats) LineStats {
	return LineStats{
		WindowS:             int64(st.Window / time.Second),
		TimeInLine:          newSpread(st.TimeInLine),
		ETAError:            newSpread(st.ETAError),
		TimeInside:          newSpread(st.TimeInside),
		Arrivals:            st.Arrivals,
		Admitted:            st.Admitted,
		Abandoned:           st.Abandoned,
		AbandonmentRate:     st.AbandonmentRate,
		ArrivalsPerMinute:   st.ArrivalsPerMinute,
		AdmissionsPerMinute: st.AdmissionsPerMinute,
		Active:              st.Active,
	}
}

// historyCSVHeader names the columns of the history's CSV, one row per
// ended interval, oldest first: its start (RFC 3339, UTC, and Unix ms)
// and the counts of HistoryPoint. Every cell is a number or a timestamp,
// so no spreadsheet reads one as a formula.
var historyCSVHeader = []string{"at", "at_ms", "admitted", "waiting", "abandoned", "arrivals", "active", "refill_effective"}

// writeHistoryCSV writes queue q's history as a CSV download. q is a
// configured queue's name ([A-Za-z0-9_-]), safe in the file name.
func writeHistoryCSV(w http.ResponseWriter, q string, points []queue.HistoryPoint) {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="waitroom-`+q+`-history.csv"`)
	w.WriteHeader(http.StatusOK)
	cw := csv.NewWriter(w)
	_ = cw.Write(historyCSVHeader) // a failed write is the client gone: nothing to tell it
	for _, p := range points {
		n := func(v int64) string { return strconv.FormatInt(v, 10) }
		_ = cw.Write([]string{p.At.UTC().Format("2006-01-02T15:04:05.000Z07:00"), n(p.At.UnixMilli()),
			n(p.Admitted), n(p.Waiting), n(p.Abandoned), n(p.Arrivals), n(p.Active), n(p.Refill)})
	}
	cw.Flush()
}
