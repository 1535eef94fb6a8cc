package changes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/backoffice/audit"
	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// view is a queue as a test's back office sees it.
type view struct {
	MaxWaiting int  `json:"max_waiting"`
	Paused     bool `json:"paused"`
}

func newSettings(t *testing.T) (*Settings[view], string, *audit.Log) {
	t.Helper()
	rdb := redistest.Client(t)
	q := fmt.Sprintf("bo%d", time.Now().UnixNano())
	store, err := queue.NewStore(rdb, []string{q}, queue.Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour}, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	log, err := audit.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	read := func(ctx context.Context, name string) (view, error) {
		info, err := store.Info(ctx, name)
		return view{MaxWaiting: info.Settings.MaxWaiting, Paused: info.Paused}, err
	}
	return &Settings[view]{Store: queue.NewInspector(store), Audit: log, View: read}, q, log
}

// A change is made, answered with the view after, and audited with each
// value before and after; a private setting by host only.
func TestApplyAuditsTheChange(t *testing.T) {
	ctx := context.Background()
	s, q, log := newSettings(t)
	u := queue.Update{MaxWaiting: ptr(40), WebhookURL: ptr("https://hooks.example/in?token=secret")}
	requested := map[string]json.RawMessage{"max_waiting": json.RawMessage(`40`), "webhook_url": json.RawMessage(`"https://hooks.example/in?token=secret"`)}
	after, err := s.Apply(ctx, Change{Queue: q, Action: "settings", Requested: requested, Update: u,
		Who: audit.Entry{ClientIP: "192.0.2.1", RequestID: "r1"}, Log: slog.New(slog.DiscardHandler)})
	if err != nil || after.MaxWaiting != 40 {
		t.Fatalf("Apply = %+v, %v", after, err)
	}
	entries, err := log.List(ctx, q, 10)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit %+v %v", entries, err)
	}
	e := entries[0]
	b, _ := json.Marshal(e.Changes)
	want := `[{"field":"max_waiting","old":0,"new":40},{"field":"webhook_url","old":null,"new":"hooks.example"}]`
	if e.Action != "settings" || e.ClientIP != "192.0.2.1" || e.RequestID != "r1" || string(b) != want {
		t.Fatalf("audit entry %+v\nchanges %s\nwant    %s", e, b, want)
	}
}

// A change refused by the store is neither made nor audited.
func TestApplyRefused(t *testing.T) {
	ctx := context.Background()
	s, q, log := newSettings(t)
	_, err := s.Apply(ctx, Change{Queue: q, Action: "settings", Requested: map[string]json.RawMessage{"max_waiting": json.RawMessage(`-1`)},
		Update: queue.Update{MaxWaiting: ptr(-1)}, Log: slog.New(slog.DiscardHandler)})
	var fe *queue.FieldError
	if !errors.As(err, &fe) || fe.Field != "max_waiting" {
		t.Fatalf("Apply = %v, want a FieldError for max_waiting", err)
	}
	if entries, err := log.List(ctx, q, 10); err != nil || len(entries) != 0 {
		t.Fatalf("audit %+v %v", entries, err)
	}
}

// The view after could not be read: the change stands, audited with the
// values asked, and the error is returned.
func TestApplyViewAfterFails(t *testing.T) {
	ctx := context.Background()
	s, q, log := newSettings(t)
	read, calls := s.View, 0
	s.View = func(ctx context.Context, name string) (view, error) {
		if calls++; calls > 1 {
			return view{}, errors.New("view unavailable")
		}
		return read(ctx, name)
	}
	var logs bytes.Buffer
	_, err := s.Apply(ctx, Change{Queue: q, Action: "settings", Requested: map[string]json.RawMessage{"paused": json.RawMessage(`true`)},
		Update: queue.Update{Paused: ptr(true)}, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		t.Fatal("Apply answered although the view after failed")
	}
	entries, _ := log.List(ctx, q, 10)
	if len(entries) != 1 || string(entries[0].Changes[0].Old) != "false" || string(entries[0].Changes[0].New) != "true" {
		t.Fatalf("audit %+v", entries)
	}
}

func ptr[T any](v T) *T { return &v }
