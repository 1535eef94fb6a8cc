package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Main(m)) }

// The whole service starts from its environment, serves, and stops
// cleanly when its context ends (SIGTERM in production).
func TestRunServesAndShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	queue := fmt.Sprintf("run%d", time.Now().UnixNano())
	env := map[string]string{
		"WAITROOM_ADDR":            addr,
		"WAITROOM_REDIS_URL":       "redis://" + redistest.Addr(t) + "/0",
		"WAITROOM_QUEUES":          queue + ",other",
		"WAITROOM_REFILL_SIZE":     "1",
		"WAITROOM_REFILL_INTERVAL": "100ms",
		"WAITROOM_ADMIN_TOKEN":     "t",
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, io.Discard) }()

	base := "http://" + addr
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("service never became ready")
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Two users, one token: the scheduler's ticks admit the second.
	for _, u := range []string{"a", "b"} {
		resp, err := http.Post(base+"/api/v1/queues/"+queue+"/enter", "application/json", strings.NewReader(`{"user_id":"`+u+`"}`))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("enter %s: %v %v", u, err, resp)
		}
		resp.Body.Close()
	}
	for {
		resp, err := http.Get(base + "/api/v1/queues/" + queue + "/status?user_id=b")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), `"ENTERED"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never admitted: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

func TestRunRejectsBadConfig(t *testing.T) {
	for _, env := range []map[string]string{
		{"WAITROOM_REFILL_SIZE": "0"},
		{"WAITROOM_REFILL_SIZE": "ten"},
		{"WAITROOM_REFILL_INTERVAL": "10ms"},
		{"WAITROOM_REFILL_INTERVAL": "soon"},
		{"WAITROOM_SESSION_TTL": "-1m"},
		{"WAITROOM_QUEUES": "a,{b}"},
		{"WAITROOM_QUEUES": " , "},
		{"WAITROOM_REDIS_URL": "http://nope"},
		{"WAITROOM_TARGET_URL": "/relative"},
		{"WAITROOM_LOG_LEVEL": "loud"},
		{"WAITROOM_REQUEST_TIMEOUT": "0s"},
	} {
		err := run(context.Background(), func(k string) string { return env[k] }, io.Discard)
		if err == nil {
			t.Errorf("run with %v: no error", env)
		}
	}
}
