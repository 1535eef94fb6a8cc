// Command bare is the floor under waitroom's /healthz, for the benchmarks
// only (scripts/bench-pair.sh, a build named "bare"): a plain net/http
// server configured as cmd/waitroom configures its own (the same timeouts,
// header limit and GOGC) whose GET /healthz writes what waitroom's healthz
// handler writes (the same body, Content-Type and Cache-Control), with no
// router, no middleware and no connection cap. Its CPU per request beside
// waitroom's /healthz is what waitroom's chain costs.
//
// With WAITROOM_UPSTREAM set it is also the floor under waitroom's
// reverse-proxy gate (scripts/bench-gate.sh, scenario bare): every other
// path goes through a bare httputil.ReverseProxy to the upstream, with the
// transport internal/gate/proxy gives waitroom's (the same dialer, keep-alive
// pool and response-header timeout) and the same Rewrite minus the gate
// (SetURL, SetXForwarded): no pass check, no header or cookie stripping,
// no request id, log or metrics. Its CPU per request beside the gate's is
// what the gate adds.
//
// Like waitroom it listens on WAITROOM_ADDR (default 127.0.0.1:8080) and
// answers GET /readyz, so scripts/lib.sh starts it as it starts waitroom;
// every other variable is ignored.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime/debug"
	"time"

	"github.com/waitroom/waitroom/internal/infra/version"
)

var (
	body          = healthzBody()
	jsonHeader    = []string{"application/json; charset=utf-8"}
	noStoreHeader = []string{"no-store"}
)

// healthzBody is waitroom's /healthz body, version and all: built from
// the same checkout, as bench-pair.sh and bench-gate.sh build both, the
// two write the same bytes.
func healthzBody() []byte {
	v, _ := json.Marshal(version.String()) // a string always marshals
	return []byte(`{"status":"ok","version":` + string(v) + "}\n")
}

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400) // cmd/waitroom's gcPercent
	}
	addr := os.Getenv("WAITROOM_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	var upstream http.Handler
	if u := os.Getenv("WAITROOM_UPSTREAM"); u != "" {
		target, err := url.Parse(u)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bare: WAITROOM_UPSTREAM:", err)
			os.Exit(1)
		}
		upstream = reverseProxy(target)
	}
	h := func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" && upstream != nil {
			upstream.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet || (r.URL.Path != "/healthz" && r.URL.Path != "/readyz") {
			http.NotFound(w, r)
			return
		}
		hd := w.Header()
		hd["Content-Type"] = jsonHeader
		hd["Cache-Control"] = noStoreHeader
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
	srv := &http.Server{
		Addr:              addr,
		Handler:           http.HandlerFunc(h),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       75 * time.Second, // WAITROOM_IDLE_TIMEOUT's default
		MaxHeaderBytes:    8192,             // WAITROOM_MAX_HEADER_BYTES's default
	}
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "bare:", err)
		os.Exit(1)
	}
}

// reverseProxy is internal/gate/proxy.New without the gate: its transport
// (WAITROOM_UPSTREAM_TIMEOUT's default of 30 s) and its Rewrite's first
// two steps.
func reverseProxy(upstream *url.URL) http.Handler {
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	transport.ResponseHeaderTimeout = 30 * time.Second
	transport.MaxIdleConnsPerHost = 256
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(upstream)
			pr.SetXForwarded()
		},
		Transport: transport,
	}
}
