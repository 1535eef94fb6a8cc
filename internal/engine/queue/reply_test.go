package queue

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/waitroom/waitroom/internal/infra/rediskeys"
	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// luaMirror pairs each name common.lua gives a reply's status code or
// position with the Go constant reply.go reads it by, in both files'
// order. Positions count from 1 in Lua and from 0 in Go.
var luaMirror = []struct {
	lua  string
	want int // the Lua value the Go constant stands for
}{
	{"ALLOWED", statusAllowed},
	{"ENTERED", statusEntered},
	{"WAITING", statusWaiting},
	{"NOT_WAITING", statusNotWaiting},
	{"NOT_OPEN", statusNotOpen},
	{"LIMITED", statusLimited},
	{"FULL", statusFull},
	{"CHALLENGE", statusChallenge},
	{"HUMAN", statusHuman},
	{"OTHER_LINE", statusOtherLine},
	{"CLOSED", statusClosed},
	{"DRAW_STALE", statusDrawStale},

	{"HEAD_WAITING", headWaiting + 1},
	{"HEAD_UNTIL_NEXT_TICK", headUntilNextTick + 1},
	{"HEAD_INTERVAL", headInterval + 1},
	{"HEAD_REFILL_SIZE", headRefillSize + 1},
	{"HEAD_TTL", headTTL + 1},
	{"HEAD_PAUSED", headPaused + 1},
	{"HEAD_OPENS_AT", headOpensAt + 1},
	{"HEAD_PREQUEUE_FROM", headPrequeueFrom + 1},
	{"HEAD_ABANDON_AFTER", headAbandonAfter + 1},
	{"HEAD_UNTIL_OPEN", headUntilOpen + 1},
	{"HEAD_CLOSED", headClosed + 1},

	{"INFO_WAITING", infoWaiting + 1},
	{"INFO_ENTERED", infoEntered + 1},
	{"INFO_TOKENS", infoTokens + 1},
	{"INFO_REFILL_SIZE", infoRefillSize + 1},
	{"INFO_INTERVAL", infoInterval + 1},
	{"INFO_TTL", infoTTL + 1},
	{"INFO_LAST_TICK_AT", infoLastTickAt + 1},
	{"INFO_NOW", infoNow + 1},
	{"INFO_MAX_ACTIVE", infoMaxActive + 1},
	{"INFO_PAUSED", infoPaused + 1},
	{"INFO_ABANDON_AFTER", infoAbandonAfter + 1},
	{"INFO_ABANDONED", infoAbandoned + 1},
	{"INFO_OPENS_AT", infoOpensAt + 1},
	{"INFO_PREQUEUE_FROM", infoPrequeueFrom + 1},
	{"INFO_DRAW_FOR", infoDrawFor + 1},
	{"INFO_DRAW_PLACING", infoDrawPlacing + 1},
	{"INFO_DRAW_COUNT", infoDrawCount + 1},
	{"INFO_ADMITTED", infoAdmitted + 1},
	{"INFO_MAX_WAITING", infoMaxWaiting + 1},
	{"INFO_DIFFICULTY", infoDifficulty + 1},
	{"INFO_BUDGET", infoBudget + 1},
	{"INFO_CLOSED", infoClosed + 1},

	{"TICK_APPLIED", tickApplied + 1},
	{"TICK_MOVED", tickMoved + 1},
	{"TICK_WAITING", tickWaiting + 1},
	{"TICK_TOKENS", tickTokens + 1},
	{"TICK_PURGED", tickPurged + 1},
	{"TICK_ADMITTED", tickAdmitted + 1},
	{"TICK_ABANDONED", tickAbandoned + 1},
	{"TICK_LATE", tickLate + 1},
	{"TICK_UNTIL_NEXT", tickUntilNext + 1},
	{"TICK_BUDGET", tickBudget + 1},
	{"TICK_ADAPTED", tickAdapted + 1},
	{"TICK_LANES", tickLanes + 1},
	{"LANES_CHANGED", tickLanesChanged},
	{"WINDOWS_DUE", tickWindowsDue},

	{"WINDOWS_DID", windowsDid + 1},
	{"WINDOWS_AT", windowsAt + 1},
	{"WINDOWS_CHANGES", windowsChanges + 1},
	{"WINDOW_STARTED", windowStarted},
	{"WINDOW_ENDED", windowEnded},

	{"STAT_LINE", int(TimeInLine)},
	{"STAT_ETA", int(ETAError)},
	{"STAT_INSIDE", int(TimeInside)},

	{"REASON_MOVED", int(reasonMoved)}, // a code of REASONS, from 1
}

// notReplies are the common prelude's numeric constants (common.lua and
// its parts) that describe no reply.
var notReplies = []string{"DEFAULTS", "GONE_KEEP_MS", "EVENTS_PER_ENTRY", "EVENTS_MAXLEN", "EVENTS_BULK_MAXLEN"}

// TestRepliesMatchLua fails when reply.go and common.lua disagree on a
// status code, a reply position or a reason: a Lua list changed without
// its Go mirror (or the reverse) would otherwise shift every value after
// the change, silently.
func TestRepliesMatchLua(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()

	// Every numeric constant common.lua declares is mirrored, and nothing
	// else is: a name added on one side only fails here.
	var declared []string
	for _, m := range regexp.MustCompile(`(?m)^local ([A-Z][A-Z0-9_]*) = -?\d+\b`).FindAllStringSubmatch(commonLua, -1) {
		if !slices.Contains(notReplies, m[1]) {
			declared = append(declared, m[1])
		}
	}
	var mirrored []string
	for _, m := range luaMirror {
		mirrored = append(mirrored, m.lua)
	}
	if !slices.Equal(declared, mirrored) {
		t.Errorf("common.lua declares, in order:\n  %v\nreply.go mirrors:\n  %v", declared, mirrored)
	}
	// Each list's length: the last position plus one.
	for _, n := range []struct {
		name     string
		last, by int
	}{{"head", headClosed, headLen}, {"info", infoClosed, infoLen}, {"tick", tickLanes, tickLen}, {"windows", windowsChanges, windowsLen}} {
		if n.last+1 != n.by {
			t.Errorf("%sLen is %d, but its last position is %d", n.name, n.by, n.last)
		}
	}

	// The values as Lua has them, run on Redis, fifty names a script (a
	// Lua function reaches at most 60 of the prelude's names).
	var got []int64
	for names := range slices.Chunk(mirrored, 50) {
		v, err := luaValues(ctx, rdb, "return {"+strings.Join(names, ", ")+"}")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v...)
	}
	if len(got) != len(luaMirror) {
		t.Fatalf("Lua gave %d values for %d names (a name it does not know is nil): %v", len(got), len(luaMirror), got)
	}
	for i, m := range luaMirror {
		if got[i] != int64(m.want) {
			t.Errorf("%s is %d in common.lua, but reply.go reads it as %d", m.lua, got[i], m.want)
		}
	}

	// reply_head builds its table in one constructor: each value must land
	// at its HEAD_* position. Arguments: waiting, tick key, now, refill,
	// and queue_config's table; the tick key holds next_at_ms 99, so
	// until_next_tick_ms is 99 - now = 102, and until_open_ms opens_at -
	// now = 110.
	key := rediskeys.Tick(fmt.Sprintf("t%d-replies", time.Now().UnixNano()))
	if err := rdb.HSet(ctx, key, "next_at_ms", 99).Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), key) })
	head, err := luaValues(ctx, rdb, "return reply_head(101, KEYS[1], -3, 104, {refill_interval_ms = 103, session_ttl_ms = 105, "+
		"paused = 106, abandon_after_ms = 109, opens_at_ms = 107, prequeue_from_ms = 108})", key)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, headLen)
	for pos, v := range map[int]int64{
		headWaiting: 101, headUntilNextTick: 102, headInterval: 103, headRefillSize: 104, headTTL: 105,
		headPaused: 106, headOpensAt: 107, headPrequeueFrom: 108, headAbandonAfter: 109, headUntilOpen: 110,
	} {
		want[pos] = v
	}
	if !slices.Equal(head, want) {
		t.Errorf("reply_head gives %v, want %v (in head* order)", head, want)
	}

	// The reasons' codes: their places in REASONS.
	names, err := runLua(ctx, rdb, commonLua, "return REASONS", nil).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(names, reasons) {
		t.Errorf("common.lua's REASONS are %v, reply.go's reasons %v", names, reasons)
	}
}

// luaValues runs body after common.lua, as the scripts run, and returns
// the integers it answers.
func luaValues(ctx context.Context, rdb functionCaller, body string, keys ...string) ([]int64, error) {
	return runLua(ctx, rdb, commonLua, body, keys).Int64Slice()
}

// runLua runs body after helpers as a script of its own, as the store
// runs its scripts (newScript).
func runLua(ctx context.Context, rdb functionCaller, helpers, body string, keys []string, args ...any) *redis.Cmd {
	return newScript("test", helpers, body).Run(ctx, rdb, keys, args...)
}
