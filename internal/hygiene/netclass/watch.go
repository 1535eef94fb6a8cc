package netclass

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// Watcher keeps the table of a networks file current: it polls the file
// and reloads it when it changes, keeping the last good table when a
// reload fails, so that a typo in an edit never unclasses the crowd.
type Watcher struct {
	path  string
	every time.Duration
	log   *slog.Logger
	cur   atomic.Pointer[loaded]
	polls atomic.Uint64 // polls done, for a test to wait on
}

// loaded is one table and when it was read.
type loaded struct {
	table *Table
	at    time.Time
}

// stamp is what a poll compares to tell that the file changed. A
// rewrite within the file system's clock tick that keeps the size is
// missed, which a rename into place (the build command's way) never is.
type stamp struct {
	mod  int64 // Unix nanoseconds
	size int64
	err  string // the stat's error: a missing file is a change too
}

// Watch loads the networks file at path and then polls it every every
// until ctx ends, reloading it when its modification time or size
// changes. An error in the first load is returned (naming file and
// line); a failed reload keeps the last good table and is logged once
// per change at WARN. A nil log logs nothing.
func Watch(ctx context.Context, path string, every time.Duration, log *slog.Logger) (*Watcher, error) {
	if every <= 0 {
		return nil, fmt.Errorf("netclass: poll interval %v, want more than 0", every)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Watcher{path: path, every: every, log: log}
	seen := w.stat()
	t, err := w.load()
	if err != nil {
		return nil, err
	}
	w.cur.Store(&loaded{table: t, at: time.Now()})
	go w.poll(ctx, seen)
	return w, nil
}

// Table returns the current table: one atomic load, for the hot path. A
// nil Watcher (no networks file) returns nil, which lists nothing.
func (w *Watcher) Table() *Table {
	if w == nil {
		return nil
	}
	return w.cur.Load().table
}

// Loaded returns when the current table was read and its prefixes per
// class (Table.Sizes).
func (w *Watcher) Loaded() (at time.Time, sizes map[Class]int) {
	if w == nil {
		return time.Time{}, (*Table)(nil).Sizes()
	}
	l := w.cur.Load()
	return l.at, l.table.Sizes()
}

func (w *Watcher) poll(ctx context.Context, seen stamp) {
	tick := time.NewTicker(w.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		// Stat before reading: a change landing between the two is read
		// now and seen again at the next poll, never missed.
		now := w.stat()
		w.polls.Add(1)
		if now == seen {
			continue
		}
		seen = now
		t, err := w.load()
		if err != nil {
			at, _ := w.Loaded()
			w.log.Warn("networks file not reloaded: keeping the table loaded before", "err", err, "file", w.path, "loaded_at", at)
			continue
		}
		w.cur.Store(&loaded{table: t, at: time.Now()})
		w.log.Info("networks file reloaded", "file", w.path, "prefixes", t.Len(),
			"shared", t.sizes[Shared], "hosting", t.sizes[Hosting], "default", t.sizes[Default])
	}
}

func (w *Watcher) stat() stamp {
	fi, err := os.Stat(w.path)
	if err != nil {
		return stamp{err: err.Error()}
	}
	return stamp{mod: fi.ModTime().UnixNano(), size: fi.Size()}
}

func (w *Watcher) load() (*Table, error) {
	f, err := os.Open(w.path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is the ParseError's already
		}
		return nil, &ParseError{File: w.path, Err: err}
	}
	defer f.Close()
	return Parse(f, w.path)
}
