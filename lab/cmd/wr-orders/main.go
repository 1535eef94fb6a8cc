// Command wr-orders is a bare order page of limited capacity, for
// measuring how the order page's health drives the admission rate
// (scripts/adapt.sh): it serves at most WAITROOM_DEMO_CAPACITY orders
// at once, each taking WAITROOM_DEMO_ORDER_TIME, and more wait their turn
// (demo.Capacity), so its latency grows past its capacity. It checks no
// pass: it sits behind waitroom's reverse-proxy gate, which does.
//
// Environment: WR_ORDERS_ADDR (127.0.0.1:8081), WAITROOM_DEMO_CAPACITY
// (4), WAITROOM_DEMO_ORDER_TIME (400ms). POST /buy and GET /healthz both
// wait for a slot (a probe sees what an order sees).
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "wr-orders:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string) error {
	get := func(k, def string) string {
		if v := getenv(k); v != "" {
			return v
		}
		return def
	}
	capacity, orderTime, err := demo.CapacityFromEnv(getenv("WAITROOM_DEMO_CAPACITY"), getenv("WAITROOM_DEMO_ORDER_TIME"), 4, 400*time.Millisecond, 1)
	if err != nil {
		return err
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true}` + "\n"))
	})
	mux := http.NewServeMux()
	page := demo.Capacity(ok, capacity, orderTime)
	mux.Handle("POST /buy", page)
	mux.Handle("GET /healthz", page)
	srv := &http.Server{Addr: get("WR_ORDERS_ADDR", "127.0.0.1:8081"), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(os.Stderr, "wr-orders: %s, %d at once, %s each (%.1f orders/s)\n", srv.Addr, capacity, orderTime,
		float64(capacity)/orderTime.Seconds())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutCtx)
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
