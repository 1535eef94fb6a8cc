package publicapi

import (
	"net/http"

	"github.com/waitroom/waitroom/internal/infra/version"
	"github.com/waitroom/waitroom/internal/web/httpkit"
)

// The health checks' answers, encoded once at start: httpkit.WriteJSON of
// map[string]string{"status": ...} would encode the same bytes through
// reflection on every call (TestHealthBodiesMatchEncodingJSON), and
// /healthz is what load balancers and the benchmarks' floor ask most.
// /healthz carries the build's version, so an operator can tell which
// release each replica runs.
var (
	healthyBody = append(appendString([]byte(`{"status":"ok","version":`), version.String()), "}\n"...)
	readyBody   = []byte(`{"status":"ready"}` + "\n")
)

// Healthz answers while the process serves: liveness, asking nothing of
// Redis.
func (s *API) Healthz(w http.ResponseWriter, r *http.Request) {
	httpkit.SetJSONHeaders(w, http.StatusOK)
	_, _ = w.Write(healthyBody)
}

// Readyz answers 200 while the store reaches Redis, else 503: readiness.
func (s *API) Readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.store.Ping(r.Context()); err != nil {
		s.fail(w, r, httpkit.ErrUnavailable)
		return
	}
	httpkit.SetJSONHeaders(w, http.StatusOK)
	_, _ = w.Write(readyBody)
}
