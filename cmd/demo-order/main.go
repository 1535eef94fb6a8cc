// Command demo-order runs the demo order page (internal/testkit/demo) behind which
// waitroom's compose set-up puts its gate.
//
// Environment: DEMO_ADDR (:8081), DEMO_WAITROOM_URL (http://localhost:8080,
// as this server reaches waitroom), DEMO_QUEUE (default), DEMO_ISSUER
// (waitroom), DEMO_WAITING_PAGE (/q/{queue}), DEMO_INSECURE_COOKIE (false; true only for
// local http), WAITROOM_DEMO_CAPACITY (0: none; the orders it serves at
// once, more wait, so latency grows past it: demo.Capacity) and
// WAITROOM_DEMO_ORDER_TIME (200ms, each order's time).
//
// With DEMO_SHOP_ADDR (":8082" in the compose set-up; empty: none) it also
// serves the demo shop (demo.NewShop) there, a single-page shop on an origin
// of its own that books through waitroom's in-page agent, loaded from
// DEMO_AGENT_URL (waitroom as browsers reach it, http://localhost:8080), which
// must list the shop's origin in WAITROOM_CORS_ORIGINS.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/demo"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "demo-order:", err)
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
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	queue := get("DEMO_QUEUE", "default")
	insecure, err := strconv.ParseBool(get("DEMO_INSECURE_COOKIE", "false"))
	if err != nil {
		return fmt.Errorf("DEMO_INSECURE_COOKIE: %w", err)
	}
	waitroom := get("DEMO_WAITROOM_URL", "http://localhost:8080")
	// The middleware loads waitroom's JWKS at start: wait for it.
	if err := awaitReady(ctx, waitroom+"/readyz", log); err != nil {
		return err
	}
	capacity, orderTime, err := demo.CapacityFromEnv(getenv("WAITROOM_DEMO_CAPACITY"), getenv("WAITROOM_DEMO_ORDER_TIME"), 0, 200*time.Millisecond, 0)
	if err != nil {
		return err
	}
	h, err := demo.New(ctx, demo.Options{
		Capacity:       capacity,
		OrderTime:      orderTime,
		Queue:          queue,
		Waitroom:       waitroom,
		Issuer:         get("DEMO_ISSUER", "waitroom"),
		WaitingPage:    get("DEMO_WAITING_PAGE", "/q/"+queue),
		InsecureCookie: insecure,
	})
	if err != nil {
		return err
	}
	servers := []*http.Server{newServer(get("DEMO_ADDR", ":8081"), h)}
	if addr := getenv("DEMO_SHOP_ADDR"); addr != "" {
		shop, err := demo.NewShop(ctx, demo.ShopOptions{
			Queue:    queue,
			Waitroom: waitroom,
			Public:   get("DEMO_AGENT_URL", "http://localhost:8080"),
			Issuer:   get("DEMO_ISSUER", "waitroom"),
		})
		if err != nil {
			return err
		}
		servers = append(servers, newServer(addr, shop))
	}
	errc := make(chan error, len(servers))
	for _, srv := range servers {
		go func() {
			log.Info("demo listening", "addr", srv.Addr, "waitroom", waitroom, "queue", queue)
			errc <- srv.ListenAndServe()
		}()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutCtx); err != nil {
			return err
		}
	}
	for range servers {
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	}
	return nil
}

func newServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}

// awaitReady polls url until it answers 200, once a second.
func awaitReady(ctx context.Context, url string, log *slog.Logger) error {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		log.Info("waiting for waitroom", "url", url)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
