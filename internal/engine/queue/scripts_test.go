package queue

import (
	"context"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waitroom/waitroom/internal/testkit/redistest"
)

// bodies are the files of scripts/ that are a script's body (newScript's
// last argument); every other file holds helpers, which a library defines
// once for all of its calls.
var bodies = []string{"close.lua", "enter.lua", "status.lua", "leave.lua", "info.lua", "done.lua", "renew.lua", "challenge.lua",
	"settings.lua", "snapshot.lua", "move.lua", "drops.lua", "tick.lua", "windows.lua", "redeem.lua", "codes_add.lua", "codes_revoke.lua", "draw.lua"}

var (
	topLocal   = regexp.MustCompile(`(?m)^local ([A-Za-z_][A-Za-z0-9_, ]*?)\s*(=|$|--)`)
	constName  = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	beginBlock = regexp.MustCompile(`(?s)\nlocal function ([a-z_]+)_begin\(\)\n(.*?)\nend\n`)
)

// A library's helpers outlive the call: a value a helper file keeps for
// one call (its lane, what it read) must be set again by the file's
// <file>_begin, which every call runs first, or a call would see the
// last one's. Other names in capitals are constants: never assigned again.
func TestScriptStateIsReset(t *testing.T) {
	names, err := fs.Glob(scriptFiles, "scripts/*.lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range names {
		file := strings.TrimPrefix(path, "scripts/")
		if slices.Contains(bodies, file) {
			continue
		}
		src := lua(file)
		stem := strings.TrimSuffix(file, ".lua")
		reset := ""
		if m := beginBlock.FindStringSubmatch(src); m != nil {
			if m[1] != stem {
				t.Errorf("%s: %s_begin, want %s_begin", file, m[1], stem)
			}
			reset = m[2]
		}
		for _, m := range topLocal.FindAllStringSubmatch(src, -1) {
			if strings.HasPrefix(m[1], "function ") {
				continue
			}
			for _, name := range strings.Split(m[1], ",") {
				name = strings.TrimSpace(name)
				set := regexp.MustCompile(`\b` + name + `\b[^=\n]*=|,\s*` + name + `\b`).MatchString(reset)
				switch {
				case set:
				case constName.MatchString(name):
					assigned := regexp.MustCompile(`(?m)^\s*(` + name + `\s*(\[[^\]]*\])?\s*=[^=]|table\.insert\(` + name + `\b)`)
					if assigned.MatchString(src) {
						t.Errorf("%s: constant %s is assigned again", file, name)
					}
				default:
					t.Errorf("%s: %s is kept for a call but %s_begin does not set it", file, name, stem)
				}
			}
		}
	}
}

// Each call runs with the values its own ARGV gives, not the last
// call's: two calls of one library on two lanes each see their own.
func TestScriptCallsDoNotShareState(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	ctx := context.Background()
	sc := newScript("test", commonLua, "return {LANE, tostring(timing_read), tostring(line_rate(KEYS[1], 5))}")
	for _, lane := range []string{"vip", "", "other"} {
		// ARGV as the store sends it: the replica's defaults, then the lane.
		got, err := sc.Run(ctx, rdb, []string{"wr:{state}:tick"}, append(scriptDefaults(benchSettings), lane)...).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		if got[0] != lane || got[1] != "nil" { // timing_read: set by line_rate, after the reading
			t.Errorf("lane %q: the call saw %v", lane, got)
		}
	}
}

// A Redis that lost its functions (restarted without persistence,
// flushed, a new primary) gets the library again at the next call.
func TestScriptReloadsWhenRedisLostIt(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	sc := newScript("test", commonLua, "return 7")
	if v, err := sc.Run(ctx, rdb, nil).Int64(); err != nil || v != 7 {
		t.Fatalf("first call: %v %v", v, err)
	}
	if err := rdb.FunctionDelete(ctx, sc.name).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := sc.Run(ctx, rdb, nil).Int64(); err != nil || v != 7 {
		t.Fatalf("after the library was deleted: %v %v", v, err)
	}
}
