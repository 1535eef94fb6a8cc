package queue

import (
	"embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Each state change is one Lua script, run atomically with EVALSHA (go-redis
// falls back to EVAL and caches the script when Redis does not know it yet,
// e.g. after a restart). A script is composed of files of scripts/, in
// order, one source sent as one script: first the prelude every queue
// script shares (commonLua: the reading of the settings the scripts use,
// written from Catalog by configLua, then common.lua and its parts, the
// one definition of the replies' names, the clock, the config and the
// ETA), then the files of the script's steps, then its own file, whose
// header says its KEYS, ARGV and reply and whose body calls the steps.
// Each file stays short enough to read in one sitting; the script, not
// any one file, is atomic.

//go:embed scripts/*.lua
var scriptFiles embed.FS

// lua is the files of scripts/ named, in order, as one source. Every
// name is a literal of this package, read once as it loads: a misspelt
// one panics in every test.
func lua(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		src, err := scriptFiles.ReadFile("scripts/" + n)
		if err != nil {
			panic("queue: " + err.Error())
		}
		b.Write(src)
	}
	return b.String()
}

var commonLua = configLua(Catalog) + lua("common.lua", "common_config.lua", "common_limits.lua", "common_places.lua",
	"common_events.lua", "common_settings.lua")

// networksLua holds the defences kept per network of the client (the
// wider networks' limits and the price of a place, price.go): enter and
// challenge get it after commonLua.
var networksLua = lua("networks.lua")

var (
	enterScript     = redis.NewScript(commonLua + networksLua + lua("enter_defences.lua", "enter_join.lua", "enter.lua"))
	statusScript    = redis.NewScript(commonLua + lua("status.lua"))
	leaveScript     = redis.NewScript(commonLua + lua("leave.lua"))
	infoScript      = redis.NewScript(commonLua + lua("info.lua"))
	doneScript      = redis.NewScript(commonLua + lua("done.lua"))
	renewScript     = redis.NewScript(commonLua + lua("renew.lua"))
	challengeScript = redis.NewScript(commonLua + networksLua + lua("challenge.lua"))
	settingsScript  = redis.NewScript(commonLua + lua("settings.lua"))
	snapshotScript  = redis.NewScript(commonLua + lua("snapshot.lua"))
	// The tick's steps, in the order its body calls them; the schedule's
	// windows are a script of their own, which the store calls before a
	// tick that asks for it (tick.go).
	tickScript = redis.NewScript(commonLua + lua("schedule.lua", "tick_lines.lua", "tick_close.lua", "tick_move.lua",
		"tick_stats.lua", "tick.lua"))
	windowsScript = redis.NewScript(commonLua + lua("schedule.lua", "windows.lua"))
)

// configLua is the Lua that reads the settings the scripts use, the rows
// of catalog marked Lua, in its order, for queue_config (common_config.lua):
//
//	DEFAULTS         ARGV[1..DEFAULTS] of a script that reads them: the
//	                 replica's defaults (scriptDefaults), then the lane
//	config_read(key) one HMGET of their config HASH fields (and of
//	                 configState's)
//	config_of(v)     the table of its reply, by HASH field: a number
//	                 unless the Kind is text, and while not stored the
//	                 replica's default (SeedAlways) or the Kind's zero (the
//	                 first of its Choices); config_of({}) is the defaults
//
// Written once as the package loads, not sent with every call (say as one
// ARGV string to split): enter and status, the hot path, neither send nor
// parse the list, their ARGV stays as it was, and the list is part of the
// script's SHA, the same for every replica of one version. Written out
// field by field, one table constructor, so reading the settings by name
// costs about what reading them by position did (a loop over a list of
// fields cost 1.7 µs more a call, measured).
func configLua(catalog []Setting) string {
	var fields, values []string
	arg := 0 // the replica's defaults taken from ARGV so far
	for _, st := range catalog {
		if !st.Lua {
			continue
		}
		fields = append(fields, luaQuote(st.Hash))
		v, def := fmt.Sprintf("v[%d]", len(fields)), "0"
		if st.Kind.number() {
			v = "tonumber(" + v + ")"
		}
		switch {
		case st.Seed == SeedAlways:
			arg++
			def = fmt.Sprintf("ARGV[%d]", arg)
			if st.Kind.number() {
				def = "tonumber(" + def + ")"
			}
		case !st.Kind.number() && len(st.Choices) > 0:
			def = luaQuote(st.Choices[0])
		case !st.Kind.number():
			def = "''"
		}
		values = append(values, "    "+st.Hash+" = "+v+" or "+def+",\n")
	}
	for _, f := range configState {
		fields = append(fields, luaQuote(f))
		values = append(values, fmt.Sprintf("    %s = tonumber(v[%d]),\n", f, len(fields)))
	}
	return "-- The settings the scripts read, written from queue.Catalog by configLua (scripts.go).\n" +
		fmt.Sprintf("local DEFAULTS = %d\n", arg+1) +
		"local function config_read(key)\n" +
		"  return redis.call('HMGET', key, " + strings.Join(fields, ", ") + ")\n" +
		"end\n" +
		"local function config_of(v)\n" +
		"  return {\n" + strings.Join(values, "") + "  }\n" +
		"end\n\n"
}

// configState are the config HASH fields the scripts keep themselves
// beside the settings, read with them into queue_config's table (a
// number, nil while not stored): the effective refill of the automatic
// rate (adapt_budget, tick_close.lua).
var configState = []string{"refill_effective"}

// scriptDefaults are the replica's defaults d as configLua's scripts take
// them in ARGV[1..DEFAULTS - 1]: the values of the rows it reads there,
// in Catalog order, as the config HASH holds them.
func scriptDefaults(d Settings) []any {
	var args []any
	for _, st := range Catalog {
		if st.Lua && st.Seed == SeedAlways {
			v, _ := st.Of(d) // a SeedAlways row has a Settings field (TestCatalogMatchesTheTypes)
			args = append(args, st.encode(v))
		}
	}
	return args
}

// luaQuote is s as a Lua string literal. The catalog's HASH fields and
// choices are plain words (TestQueueConfig), which need no escapes.
func luaQuote(s string) string { return "'" + s + "'" }
