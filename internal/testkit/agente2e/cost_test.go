package agente2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/engine/queue"
	"github.com/waitroom/waitroom/internal/engine/scheduler"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
	"github.com/waitroom/waitroom/internal/trust/place"
)

// A measurement, not a check (docs/PERFORMANCE.md, "The in-page agent
// against the waiting page"): what one person waiting costs the origin
// per minute, in the waiting page (/q/{queue}) and in the agent's dialog
// on the shop, far back and near the head: requests by kind, the server's
// CPU beyond an idle window's (this process: waitroom's handlers, the
// scheduler; Chromium is another process), and Redis's commands and CPU.
// Runs only with WAITROOM_MEASURE=1 (WAITROOM_MEASURE_SECONDS, default 60,
// is each window):
//
//	REDIS_ADDR=127.0.0.1:6394 WAITROOM_MEASURE=1 go test -count=1 -v -run TestAgentCost ./internal/testkit/agente2e/
func TestAgentCost(t *testing.T) {
	if os.Getenv("WAITROOM_MEASURE") == "" {
		t.Skip("a measurement: set WAITROOM_MEASURE=1")
	}
	window := 60 * time.Second
	if v, err := strconv.Atoi(os.Getenv("WAITROOM_MEASURE_SECONDS")); err == nil && v > 0 {
		window = time.Duration(v) * time.Second
	}
	rdb := redistest.Client(t)
	for _, sc := range []struct {
		name     string
		ahead    int
		settings queue.Settings
	}{
		// 20,000 ahead at 10 every 5 s: a wait of almost three hours.
		{"far back", 20000, queue.Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: time.Minute}},
		// 9 ahead at 1 every 10 s: within the next ten ticks for the
		// whole window, admitted after it.
		{"near the head", 9, queue.Settings{RefillSize: 1, RefillInterval: 10 * time.Second, SessionTTL: time.Minute}},
	} {
		for _, client := range []string{"idle", "waiting page", "agent"} {
			s := newSite(t, sc.settings)
			s.fill(sc.ahead)
			log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			sched, err := scheduler.Start(s.store, scheduler.Period(sc.settings.RefillInterval), log, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if client != "idle" {
				b := newBrowser(t)
				if client == "waiting page" {
					tb := b.tab(s.wr + "/q/" + s.queue)
					tb.waitJS("waiting", `document.body.dataset.state === 'waiting'`)
				} else {
					tb := b.tab(s.shop + "/")
					tb.waitJS("the shop", `!!document.getElementById('book') && document.readyState === 'complete'`)
					tb.click(`button.add[data-train="KTX 101 · 06:00"]`)
					tb.click(`#book`)
					tb.waitJS("the dialog", fmt.Sprintf(`%s && %s !== ''`, dialogOpen, agentText("position")))
				}
			}
			cpu0, cmds0, rcpu0 := processCPU(), redisStat(t, rdb, "total_commands_processed"), redisCPU(t, rdb)
			start := time.Now()
			time.Sleep(window) // the window measured, not a wait for a condition
			end := time.Now()
			cpu, cmds, rcpu := processCPU()-cpu0, redisStat(t, rdb, "total_commands_processed")-cmds0, redisCPU(t, rdb)-rcpu0
			if err := sched.Stop(); err != nil {
				t.Error(err)
			}
			perMin := func(v float64) float64 { return v * float64(time.Minute) / float64(end.Sub(start)) }
			kinds := map[string]int{}
			s.mu.Lock()
			for _, c := range s.calls {
				if c.at.After(start) && c.at.Before(end) {
					kinds[kind(c)]++
				}
			}
			s.mu.Unlock()
			var parts []string
			for _, k := range []string{"status", "line", "enter", "preflight", "other"} {
				if kinds[k] > 0 {
					parts = append(parts, fmt.Sprintf("%s %.1f", k, perMin(float64(kinds[k]))))
				}
			}
			t.Logf("%s, %s: per minute: requests {%s}; server CPU %.1f ms; Redis %.0f commands, CPU %.1f ms",
				sc.name, client, strings.Join(parts, ", "), perMin(float64(cpu.Microseconds())/1000), perMin(float64(cmds)), perMin(rcpu*1000))
		}
	}
}

func kind(c call) string {
	switch {
	case c.method == "OPTIONS":
		return "preflight"
	case strings.HasSuffix(c.path, "/status"):
		return "status"
	case strings.HasSuffix(c.path, "/line"):
		return "line"
	case strings.HasSuffix(c.path, "/enter"):
		return "enter"
	}
	return "other"
}

// processCPU is this process's CPU time so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisStat is a number from Redis's INFO.
func redisStat(t *testing.T, rdb *redis.Client, name string) float64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "all").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatalf("INFO has no %s", name)
	return 0
}

// redisCPU is Redis's own CPU time so far, in seconds (its main thread's
// user and system time).
func redisCPU(t *testing.T, rdb *redis.Client) float64 {
	return redisStat(t, rdb, "used_cpu_user") + redisStat(t, rdb, "used_cpu_sys")
}

// What one request of each kind the two clients make costs this process
// (waitroom's handler and the Go client that calls it over loopback: an
// upper bound of the server's part), and Redis, on average over many: a
// waiting person's CPU per minute is these times TestAgentCost's counts,
// which an idle window's noise would hide. Runs with WAITROOM_MEASURE=1:
//
//	REDIS_ADDR=127.0.0.1:6394 WAITROOM_MEASURE=1 go test -count=1 -v -run TestAgentRequestCPU ./internal/testkit/agente2e/
func TestAgentRequestCPU(t *testing.T) {
	if os.Getenv("WAITROOM_MEASURE") == "" {
		t.Skip("a measurement: set WAITROOM_MEASURE=1")
	}
	rdb := redistest.Client(t)
	for _, sc := range []struct {
		name  string
		ahead int
	}{{"far back", 20000}, {"near the head", 9}} {
		s := newSite(t, queue.Settings{RefillSize: 10, RefillInterval: 5 * time.Second, SessionTTL: time.Minute})
		s.fill(sc.ahead)
		// Ticks, and with them the snapshot far-back answers come from.
		log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		sched, err := scheduler.Start(s.store, scheduler.Period(5*time.Second), log, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sched.Stop() })
		tk := s.enterAPI(s.queue)
		token, _ := tk["place_token"].(string)
		if token == "" {
			t.Fatalf("no place: %v", tk)
		}
		q := s.wr + "/api/v1/queues/" + s.queue
		for _, k := range []struct {
			name        string
			method, url string
			header      []string
			wantStatus  int
		}{
			{"status (Bearer, as the agent)", "GET", q + "/status", []string{"Authorization", "Bearer " + token, "Origin", s.shop}, 200},
			{"status (cookie, as the page)", "GET", q + "/status", []string{"Cookie", place.CookieName(s.queue, false) + "=" + token}, 200},
			{"line", "GET", q + "/line", nil, 200},
			{"preflight", "OPTIONS", q + "/status", []string{"Origin", s.shop, "Access-Control-Request-Method", "GET", "Access-Control-Request-Headers", "authorization"}, 204},
		} {
			const n = 3000
			client := &http.Client{}
			do := func() {
				req, _ := http.NewRequest(k.method, k.url, nil)
				for i := 0; i+1 < len(k.header); i += 2 {
					req.Header.Set(k.header[i], k.header[i+1])
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != k.wantStatus {
					t.Fatalf("%s: %d", k.name, resp.StatusCode)
				}
			}
			for range 100 {
				do() // warm: connections, the snapshot, the caches
			}
			cpu0, cmds0, rcpu0 := processCPU(), redisStat(t, rdb, "total_commands_processed"), redisCPU(t, rdb)
			for range n {
				do()
			}
			cpu, cmds, rcpu := processCPU()-cpu0, redisStat(t, rdb, "total_commands_processed")-cmds0, redisCPU(t, rdb)-rcpu0
			t.Logf("%s, %s: %.0f µs of this process, %.2f Redis commands and %.0f µs of Redis CPU a request",
				sc.name, k.name, float64(cpu.Microseconds())/n, cmds/n, rcpu*1e6/n)
		}
	}
}
