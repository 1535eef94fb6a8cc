package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/waitroom/waitroom/client"
)

// An app waits its turn, keeping its place across restarts, then buys
// and gives the turn back.
func Example() {
	srv := exampleService() // a waitroom that admits on the second ask, for the example
	defer srv.Close()

	var saved []byte // where the app keeps its place (Keychain, a file...)
	c, err := client.New(client.Options{
		BaseURL: srv.URL,
		Queue:   "sale",
		OnPlace: func(p client.Place) { saved, _ = json.Marshal(p) },
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	t, err := c.Enter(ctx, client.EnterOptions{})
	var e *client.Error
	if errors.Is(err, client.ErrHumanCheckRequired) && errors.As(err, &e) {
		log.Fatalf("show the %s widget (site key %s), then enter with its token", e.Provider, e.SiteKey)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Status, "at", t.Position)

	// The app restarts: it restores the place and waits on.
	var p client.Place
	if err := json.Unmarshal(saved, &p); err != nil {
		log.Fatal(err)
	}
	c, err = client.New(client.Options{BaseURL: srv.URL, Queue: "sale", Place: &p})
	if err != nil {
		log.Fatal(err)
	}
	t, err = c.Wait(ctx, func(t client.Ticket) { fmt.Println(t.Status, "at", t.Position) })
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("pass:", t.Pass)
	// ... the order API checks the pass; the person buys ...
	if err := c.Done(ctx, t.Pass); err != nil {
		log.Fatal(err)
	}
	// Output:
	// WAITING at 2
	// WAITING at 1
	// ENTERED at 0
	// pass: a.pass.b
}

// exampleService answers enter with the second place in line, and
// status with the first, then with an admission.
func exampleService() *httptest.Server {
	var asked atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/queues/sale/enter", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"queue":"sale","user_id":"a:1","status":"WAITING","position":2,"waiting":2,"poll_after_ms":1,"place_token":"v2.sale.a1"}`)
	})
	mux.HandleFunc("GET /api/v1/queues/sale/status", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer v2.sale.a1" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":{"code":"invalid_place","message":"missing or invalid place credential"}}`)
			return
		}
		if asked.Add(1) == 1 {
			fmt.Fprint(w, `{"queue":"sale","user_id":"a:1","status":"WAITING","position":1,"waiting":1,"poll_after_ms":1}`)
			return
		}
		fmt.Fprint(w, `{"queue":"sale","user_id":"a:1","status":"ENTERED","position":0,"waiting":0,"poll_after_ms":0,"pass":"a.pass.b"}`)
	})
	mux.HandleFunc("POST /api/v1/queues/sale/done", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	return httptest.NewServer(mux)
}
