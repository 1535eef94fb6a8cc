package metrics

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Serve serves GET /metrics on addr, in the background, until stop is
// called. It returns the address bound (addr may name port 0). It serves
// nothing else: profiling lives on WAITROOM_DEBUG_ADDR, and the public
// listener never serves metrics.
func (m *Metrics) Serve(addr string, log *slog.Logger) (bound net.Addr, stop func() error, err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 5 * time.Second,
		// A scrape reads each queue from Redis (InfoTimeout per queue).
		WriteTimeout: 30 * time.Second,
		IdleTimeout:  2 * time.Minute,
	}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener", "err", err)
		}
	}()
	return ln.Addr(), srv.Close, nil
}
