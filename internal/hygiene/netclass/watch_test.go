package netclass

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/waitroom/waitroom/internal/testkit/wait"
)

// syncBuffer is a log sink the watcher writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually waits for cond (wait.For: the machine may be busy; the
// deadline bounds a hang, it measures nothing).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	wait.For(t, 30*time.Second, what, func() (bool, string) { return cond(), "not yet" })
}

// replace writes a file the way an operator should: to a temporary file
// renamed into place, so that no poll reads half of it.
func replace(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func TestWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "networks.txt")
	replace(t, path, "203.0.113.0/24 shared\n")
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	w, err := Watch(ctx, path, 10*time.Millisecond, log)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("203.0.113.9")
	b := netip.MustParseAddr("198.51.100.9")
	first, sizes := w.Loaded()
	if w.Table().Lookup(a) != Shared || sizes[Shared] != 1 || first.IsZero() {
		t.Fatalf("start: %s, %v, %v", w.Table().Lookup(a), sizes, first)
	}

	// A good change is picked up.
	replace(t, path, "203.0.113.0/24 shared\n198.51.100.0/24 hosting # added\n")
	eventually(t, "the new table", func() bool { return w.Table().Lookup(b) == Hosting })
	if _, sizes := w.Loaded(); sizes[Hosting] != 1 || sizes[Shared] != 1 {
		t.Errorf("sizes after reload: %v", sizes)
	}
	eventually(t, "the reload logged", func() bool { return strings.Contains(logs.String(), "networks file reloaded") })

	// A bad one keeps the last good table, and the log says where and why.
	good := w.Table()
	replace(t, path, "203.0.113.0/24 shared\n198.51.100.1/24 hosting\n# a longer file than before\n")
	want := path + ":2: netclass: prefix has host bits set"
	eventually(t, "the warning", func() bool { return strings.Contains(logs.String(), want) })
	if w.Table() != good || w.Table().Lookup(b) != Hosting {
		t.Error("a bad file replaced the table")
	}
	// Warned once per change: polls of the unchanged bad file stay quiet.
	polled := w.polls.Load()
	eventually(t, "more polls", func() bool { return w.polls.Load() >= polled+5 })
	replace(t, path, "198.51.100.0/24 shared\n")
	eventually(t, "the mended file", func() bool { return w.Table().Lookup(b) == Shared })
	if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
		t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
	}

	// A removed file is a change too: warned once, table kept.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the missing file warned", func() bool { return strings.Count(logs.String(), "level=WARN") == 2 })
	if w.Table().Lookup(b) != Shared {
		t.Error("a missing file dropped the table")
	}
	if !strings.Contains(logs.String(), path+": no such file or directory") {
		t.Errorf("log: %s", logs.String())
	}
}

func TestWatchRefusesABadStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "networks.txt")
	_, err := Watch(t.Context(), path, time.Second, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), path+": ") {
		t.Errorf("missing file: %v", err)
	}
	replace(t, path, "# ok\n10.0.0.0/8 nat\n")
	_, err = Watch(t.Context(), path, time.Second, nil)
	if !errors.Is(err, ErrClass) || !strings.HasPrefix(err.Error(), path+":2: ") {
		t.Errorf("bad file: %v", err)
	}
	if _, err := Watch(t.Context(), path, 0, nil); err == nil {
		t.Error("a zero interval accepted")
	}
}

// Readers on the hot path race a reloading watcher: -race checks the
// table is handed over safely.
func TestWatchConcurrentReads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "networks.txt")
	replace(t, path, "10.0.0.0/8 shared\n")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	w, err := Watch(ctx, path, time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := netip.MustParseAddr("10.1.2.3")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if c := w.Table().Lookup(a); c != Shared && c != Hosting {
					t.Errorf("class %s", c)
					return
				}
			}
		})
	}
	replace(t, path, "10.0.0.0/8 hosting\n")
	eventually(t, "the reload", func() bool { return w.Table().Lookup(a) == Hosting })
	close(stop)
	wg.Wait()
}
