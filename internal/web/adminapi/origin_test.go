package adminapi

import (
	"errors"
	"testing"

	"github.com/waitroom/waitroom/internal/ops/autorate"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// FuzzOriginReport: whatever a site posts, the answer is a report within
// range, or invalid_json / invalid_origin_report; never another error.
func FuzzOriginReport(f *testing.F) {
	for _, s := range []string{
		`{"p95_ms":420.5,"error_rate":0.02}`, `{"p95_ms":0,"error_rate":0}`, `{"p95_ms":600000,"error_rate":1}`,
		`{"p95_ms":-0,"error_rate":-0}`, `{"p95_ms":1e308,"error_rate":0}`, `{"p95_ms":1,"error_rate":1.0000001}`,
		`{"p95_ms":1}`, `{"p95_ms":null,"error_rate":0}`, `{"p95_ms":1,"error_rate":0,"p95_ms":2}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rep, err := originReportOf(body)
		if err != nil {
			var ae *httpkit.Error
			if !errors.As(err, &ae) || ae.Status != 400 || (ae.Code != "invalid_json" && ae.Code != "invalid_origin_report") {
				t.Fatalf("body %q: %v", body, err)
			}
			return
		}
		if rep.Validate() != nil || rep.P95 < 0 || rep.P95 > autorate.MaxReportP95 || rep.ErrorRate < 0 || rep.ErrorRate > 1 {
			t.Fatalf("body %q: report out of range %+v", body, rep)
		}
	})
}
