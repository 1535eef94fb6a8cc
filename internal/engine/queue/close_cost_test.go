package queue

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// baseCommands are the commands an enter and a status made on a queue's
// keys before sold out, draws and invitation codes (this package's test
// of commands run on ef3477c, docs/perf-log/close.md): one round trip
// (FCALL) each. A queue that uses none of them makes exactly these.
var baseCommands = map[string]string{
	"enter (a new place)":          "FCALL lua:EXISTS lua:GET lua:HMGET lua:HMGET lua:INCRBY lua:SCARD lua:ZADD lua:ZADD lua:ZCARD lua:ZREM",
	"enter (the same place again)": "FCALL lua:EXISTS lua:GET lua:HMGET lua:HMGET lua:INCRBY lua:SCARD lua:ZADD lua:ZADD lua:ZADD lua:ZCARD lua:ZREM",
	"status (waiting)":             "FCALL lua:EXISTS lua:HMGET lua:HMGET lua:SCARD lua:ZADD lua:ZCARD lua:ZMSCORE lua:ZRANK lua:ZSCORE",
	"status (inside)":              "FCALL lua:EXISTS lua:HMGET lua:HMGET lua:HMGET lua:SCARD lua:ZCARD lua:ZMSCORE",
}

// A queue that is never closed pays nothing for the sold-out feature: an
// enter and a status make the same Redis commands as before it (ef3477c),
// round trips and the commands their scripts run alike, seen with MONITOR
// on the queue's own keys (a command on no key, such as TIME, is not
// seen). The closed flag is read with the config's HMGET the scripts
// already made.
func TestNeverClosedPaysNoCommand(t *testing.T) {
	ctx := context.Background()
	s, q, rdb := newStore(t, Settings{RefillSize: 1, RefillInterval: time.Hour, SessionTTL: time.Hour})
	enter(t, s, q, "warm-in")   // admitted on the one token; loads the library
	enter(t, s, q, "warm-wait") // waits
	status(t, s, q, "warm-wait")

	for _, c := range []struct {
		name string
		do   func()
	}{
		{"enter (a new place)", func() { enter(t, s, q, "new") }},
		{"enter (the same place again)", func() { enter(t, s, q, "new") }},
		{"status (waiting)", func() { status(t, s, q, "new") }},
		{"status (inside)", func() { status(t, s, q, "warm-in") }},
	} {
		got := strings.Join(commandsOf(t, ctx, rdb, q, c.do), " ")
		t.Logf("%s: %s", c.name, got)
		if want := baseCommands[c.name]; got != want {
			t.Errorf("%s made\n  %s\nbefore sold out it made\n  %s", c.name, got, want)
		}
	}
}

// commandsOf returns the commands Redis ran on queue q's keys while do
// ran, as MONITOR shows them: "FCALL" for a round trip, "lua:HMGET" for a
// command its script ran.
func commandsOf(t *testing.T, ctx context.Context, rdb *redis.Client, q string, do func()) []string {
	t.Helper()
	lines := monitor(t, rdb)
	// MONITOR is on once it shows a command: ours, a marker.
	marker := func(tag string) string {
		m := fmt.Sprintf("wr-cost-%s-%s-%d", tag, q, time.Now().UnixNano())
		if err := rdb.Echo(ctx, m).Err(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	until := func(m string, keep func(string)) {
		deadline := time.After(10 * time.Second)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatal("MONITOR's connection closed")
				}
				if strings.Contains(l, m) {
					return
				}
				keep(l)
			case <-deadline:
				t.Fatalf("MONITOR did not show %s within 10 s", m)
			}
		}
	}
	until(marker("start"), func(string) {})
	do()
	var got []string
	tag := "{" + q + "}"
	until(marker("end"), func(l string) {
		if !strings.Contains(l, tag) {
			return // another test's
		}
		_, rest, _ := strings.Cut(l, "[")
		src, cmd, _ := strings.Cut(rest, "] ")
		name, _, _ := strings.Cut(strings.TrimPrefix(cmd, `"`), `"`)
		name = strings.ToUpper(name)
		if strings.HasSuffix(src, " lua") {
			name = "lua:" + name
		}
		got = append(got, name)
	})
	slices.Sort(got)
	return got
}

// monitor streams MONITOR's lines from a connection of its own (go-redis's
// Monitor shares its connection with the pool), until the test ends.
func monitor(t *testing.T, rdb *redis.Client) <-chan string {
	t.Helper()
	o := rdb.Options()
	conn, err := net.DialTimeout("tcp", o.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if o.Password != "" {
		user := o.Username
		if user == "" {
			user = "default"
		}
		fmt.Fprintf(conn, "AUTH %s %s\r\n", user, o.Password)
	}
	fmt.Fprint(conn, "MONITOR\r\n")
	r := bufio.NewReader(conn)
	for { // on once it says +OK (after AUTH's)
		l, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if l == "+OK\r\n" && (o.Password == "" || r.Buffered() == 0) {
			break
		}
		if strings.HasPrefix(l, "-") {
			t.Fatalf("MONITOR: %s", l)
		}
	}
	lines := make(chan string, 10000)
	go func() {
		defer close(lines)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- strings.TrimRight(l, "\r\n")
		}
	}()
	return lines
}
