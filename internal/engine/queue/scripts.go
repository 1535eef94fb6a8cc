package queue

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Each state change is one Lua script, run atomically as a Redis function
// (FCALL). A script is composed of files of scripts/, in order: first the
// prelude every queue script shares (commonLua: the reading of the
// settings the scripts use, written from Catalog by configLua, then
// common.lua and its parts, the one definition of the replies' names, the
// clock, the config and the ETA), then the files of the script's steps,
// then its own file, whose header says its KEYS, ARGV and reply and whose
// body calls the steps. Each file stays short enough to read in one
// sitting; the script, not any one file, is atomic.
//
// Why functions and not EVALSHA: an EVAL script runs its whole source on
// every call, so every helper of the prelude and the steps is made again
// (a closure each, linked to the upvalues it shares), before the body does
// anything. With ninety helpers that cost enter 13 µs a call, measured,
// against 1.5 µs when the scripts held a third as many. A function
// library runs its source once, when it is loaded: each call runs only
// the body (newScript).

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
	enterScript     = newScript("enter", commonLua+networksLua+lua("enter_defences.lua", "enter_join.lua"), lua("enter.lua"))
	statusScript    = newScript("status", commonLua, lua("status.lua"))
	leaveScript     = newScript("leave", commonLua, lua("leave.lua"))
	infoScript      = newScript("info", commonLua, lua("info.lua"))
	doneScript      = newScript("done", commonLua, lua("done.lua"))
	renewScript     = newScript("renew", commonLua, lua("renew.lua"))
	challengeScript = newScript("challenge", commonLua+networksLua, lua("challenge.lua"))
	settingsScript  = newScript("settings", commonLua+lua("draw_seal.lua"), lua("settings.lua"))
	drawScript      = newScript("draw", commonLua+lua("draw_seal.lua"), lua("draw.lua"))
	closeScript     = newScript("close", commonLua, lua("close.lua"))
	snapshotScript  = newScript("snapshot", commonLua, lua("snapshot.lua"))
	moveScript      = newScript("move", commonLua, lua("move.lua"))
	dropsScript     = newScript("drops", "", lua("drops.lua"))
	// The tick's steps, in the order its body calls them; the schedule's
	// windows are a script of their own, which the store calls before a
	// tick that asks for it (tick.go).
	tickScript = newScript("tick", commonLua+lua("schedule.lua", "tick_lines.lua", "tick_close.lua", "tick_move.lua",
		"tick_stats.lua", "tick_soldout.lua"), lua("tick.lua"))
	windowsScript = newScript("windows", commonLua+lua("schedule.lua"), lua("windows.lua"))
)

// script is one script as a Redis function: a library of its own that
// defines the prelude's and the steps' helpers once, when loaded, and
// registers one function whose body is the script's file.
type script struct {
	name string // the library's and its function's: wr_<file>_<hash of the source>
	lib  string // the library's source, FUNCTION LOAD's argument
}

// beginFunc finds the helpers that reset a file's state for each call:
// a file of the prelude or of the steps that keeps values for one call
// only (the call's lane, what it read) declares them at its top and
// resets them in "local function <file>_begin()", which each call runs
// before the body, in the order of the files. TestScriptStateIsReset
// checks that every such value is reset.
var beginFunc = regexp.MustCompile(`(?m)^local function ([a-z_]+_begin)\(\)`)

// newScript is the script of file (its name without ".lua") with the
// helpers of helpers before its body. The name carries a hash of the
// source, so replicas of two versions during an upgrade each call their
// own; each library stays in Redis until deleted (docs/OPERATIONS.md).
// KEYS and ARGV are the call's, as in an EVAL script: the function sets
// them first thing, for the helpers and the body alike.
func newScript(file, helpers, body string) *script {
	var b strings.Builder
	b.WriteString("local KEYS, ARGV -- the call's: set first thing by the function\n")
	b.WriteString(helpers)
	b.WriteString("\nredis.register_function(NAME, function(keys, args)\nKEYS, ARGV = keys, args\n")
	for _, m := range beginFunc.FindAllStringSubmatch(helpers, -1) {
		b.WriteString(m[1] + "()\n")
	}
	b.WriteString(body)
	b.WriteString("\nend)\n")
	src := b.String()
	sum := sha1.Sum([]byte(src))
	name := "wr_" + file + "_" + hex.EncodeToString(sum[:8])
	src = strings.Replace(src, "redis.register_function(NAME,", "redis.register_function('"+name+"',", 1)
	return &script{name: name, lib: "#!lua name=" + name + "\n" + src}
}

// functionCaller is what a script runs on: a client, a cluster client
// (which sends each call to its keys' primary) or one node.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...any) *redis.Cmd
	FunctionLoad(ctx context.Context, code string) *redis.StringCmd
}

// Run calls the function and, when Redis does not have it (a new or
// restarted Redis without persistence, a primary that never had this
// version), loads its library and calls again.
func (s *script) Run(ctx context.Context, rdb functionCaller, keys []string, args ...any) *redis.Cmd {
	cmd := rdb.FCall(ctx, s.name, keys, args...)
	if !missingFunction(cmd.Err()) {
		return cmd
	}
	if err := s.load(ctx, rdb); err != nil {
		return errCmd(ctx, err)
	}
	return rdb.FCall(ctx, s.name, keys, args...)
}

// eachPrimary is a cluster client: a library is loaded on every primary,
// since a function call goes to the one holding its keys.
type eachPrimary interface {
	ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
}

// load loads the script's library where rdb sends calls; a library
// already there (another replica loaded it first) is no error.
func (s *script) load(ctx context.Context, rdb functionCaller) error {
	if c, ok := rdb.(eachPrimary); ok {
		return c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			return loaded(node.FunctionLoad(ctx, s.lib).Err())
		})
	}
	return loaded(rdb.FunctionLoad(ctx, s.lib).Err())
}

func loaded(err error) error {
	if err != nil && strings.Contains(err.Error(), "already exists") {
		return nil
	}
	return err
}

// missingFunction is Redis's answer to a call of a function it does not have.
func missingFunction(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Function not found")
}

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
// rate (adapt_budget, tick_close.lua), and when the operator closed the
// sale (close.lua), which every script thus learns with no command of
// its own: a queue never closed pays nothing for it; and the id of the
// sealed draw (draw_id, draw.go), which enter compares with its caller's
// the same way: a queue with no draw pays nothing for it.
var configState = []string{"refill_effective", "closed_at_ms", "draw_id"}

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
