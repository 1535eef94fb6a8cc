package httpapi

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/web/adminapi"
)

// The history: JSON by default with the last ten minutes' figures, CSV on
// ?format=csv as a download whose every cell is a number or a timestamp,
// an unknown format refused with a stable code, and all of it behind the
// admin token.
func TestHistoryFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Client(t), slow, testTimeout, Options{AdminToken: adminToken, InsecureUserIDs: true})
	auth := []string{"Authorization", "Bearer " + adminToken}
	path := "/admin/v1/queues/" + e.queue + "/history"
	ctx := context.Background()

	tickNow := func() {
		t.Helper()
		if err := e.rdb.HDel(ctx, "wr:{"+e.queue+"}:tick", "next_at_ms").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Tick(ctx, e.queue); err != nil {
			t.Fatal(err)
		}
	}
	tickNow()
	for _, u := range []string{"a", "b", "c", "d", "e"} { // two go in, three wait
		e.enter(u)
	}
	tickNow() // closes the interval: 5 came, 2 went in; c and d move
	tickNow() // 0 came, 2 went in; e moves

	for _, q := range []string{"", "?format=csv", "?format=json"} {
		wantError(t, e.do("GET", path+q, ""), 401, "unauthorized")
	}
	for _, q := range []string{"?format=xml", "?format=CSV", "?format=csv%00"} {
		wantError(t, e.do("GET", path+q, "", auth...), 400, "invalid_format")
	}

	var hist struct {
		Points []adminapi.HistoryPoint `json:"points"`
		Stats  adminapi.LineStats      `json:"stats"`
	}
	for _, q := range []string{"", "?format=json"} {
		r := e.do("GET", path+q, "", auth...)
		if err := json.Unmarshal(r.body, &hist); err != nil || r.status != 200 {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
	}
	if len(hist.Points) != 2 || hist.Points[0].Arrivals != 5 || hist.Points[0].Admitted != 2 || hist.Points[0].Active != 2 ||
		hist.Points[1].Arrivals != 0 || hist.Points[1].Admitted != 2 || hist.Points[1].Active != 4 {
		t.Fatalf("points %+v", hist.Points)
	}
	st := hist.Stats
	if st.WindowS != 600 || st.Arrivals != 5 || st.Admitted != 4 || st.Active != 5 || st.TimeInLine.Count != 5 || st.ETAError.Count != 3 {
		t.Fatalf("stats %+v", st)
	}

	r := e.do("GET", path+"?format=csv", "", auth...)
	if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		r.header.Get("Content-Disposition") != `attachment; filename="waitroom-`+e.queue+`-history.csv"` {
		t.Fatalf("csv: %d %v", r.status, r.header)
	}
	rows, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
	if err != nil || len(rows) != 3 {
		t.Fatalf("csv rows %q: %v", r.body, err)
	}
	if !slices.Equal(rows[0], []string{"at", "at_ms", "admitted", "waiting", "abandoned", "arrivals", "active", "refill_effective"}) {
		t.Errorf("header %q", rows[0])
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for i, row := range rows[1:] {
		p := hist.Points[i]
		want := []string{"", strconv.FormatInt(p.AtMS, 10), strconv.FormatInt(p.Admitted, 10), strconv.FormatInt(p.Waiting, 10),
			strconv.FormatInt(p.Abandoned, 10), strconv.FormatInt(p.Arrivals, 10), strconv.FormatInt(p.Active, 10),
			strconv.FormatInt(p.RefillEffective, 10)}
		if !stamp.MatchString(row[0]) || !slices.Equal(row[1:], want[1:]) {
			t.Errorf("row %d = %q, want a timestamp then %q", i, row, want[1:])
		}
	}
}
